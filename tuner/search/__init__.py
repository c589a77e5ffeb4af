"""The search behind `iotuner tune`: spaces, optimisers, the stop rule, confirmation, replays.

Nothing here touches the host: the tune command hands in a `measure(point)` that runs trials.
"""
