"""TL5xx: checkpointing (seed article §6.2).

One module per rule (named by its code and name), beside what the rules share.
"""
