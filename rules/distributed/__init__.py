"""TL3xx: distributed data parallelism (seed article §4.2, §4.3).

One module per rule (named by its code and name), beside what the rules share.
"""
