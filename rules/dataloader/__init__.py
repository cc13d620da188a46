"""TL1xx: the input pipeline (seed article §3, §3.3, §6.2).

One module per rule (named by its code and name), beside what the rules share.
"""
