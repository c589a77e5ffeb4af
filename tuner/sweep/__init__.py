"""`iotuner sweep`: read throughput over a request size by queue depth grid, on one device.

grid.py parses and checks the grid; run.py measures it with one direct-read fio run per cell;
analysis.py finds the plateau, the half-power point and where throughput stops growing;
result.py turns a sweep into its JSON document; view.py shows it to a person.
"""
