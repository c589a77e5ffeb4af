"""One module per `iotuner` command; each holds the typer function and its output."""
