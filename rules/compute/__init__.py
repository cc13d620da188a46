"""TL6xx: compute (seed article §2.1, §6.1).

One module per rule (named by its code and name), beside what the rules share.
"""
