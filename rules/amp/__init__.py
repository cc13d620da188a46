"""TL4xx: mixed precision (seed article §4.1).

One module per rule (named by its code and name), beside what the rules share.
"""
