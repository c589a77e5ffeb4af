"""The typed tree of a host's hardware: its model, its JSON document and its terminal view."""
