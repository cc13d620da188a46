"""TL2xx: host-device synchronisation in the hot loop (seed article §5.2, §1.3).

One module per rule (named by its code and name), beside what the rules share.
"""
