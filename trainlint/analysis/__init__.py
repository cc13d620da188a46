"""Shared analyses, computed once per file and asked by every rule.

tree: the one traversal (node index by type, parents); names: import aliases -> qualified
names; loops: hot loops, per-step code and interval guards; tensors: which values are tensors;
positions: offsets and rows/columns of nodes, computed only for files that have findings;
words: the words of an identifier or a string, which word lists are matched against.
"""
