from trainlint.api import lint_source

LOADER = "from torch.utils.data import DataLoader\n"


def codes(text, select=("TL101", "TL104")):
    return [d.code for d in lint_source(LOADER + text, select=list(select))]


def test_blanket_noqa():
    assert codes("DataLoader(ds)  # noqa\n") == []


def test_noqa_with_codes():
    assert codes("DataLoader(ds)  # noqa: TL101\n") == []
    assert codes("DataLoader(ds)  # noqa: TL102\n") == ["TL101"]
    assert codes("DataLoader(ds, num_workers=2)  # noqa: TL101, TL104\n") == []
    assert codes("DataLoader(ds, num_workers=2)  # noqa:TL104,E501\n") == []


def test_noqa_prefix():
    assert codes("DataLoader(ds)  # noqa: TL1\n") == []


def test_trainlint_ignore():
    assert codes("DataLoader(ds)  # trainlint: ignore[TL101]\n") == []
    assert codes("DataLoader(ds)  # trainlint: ignore[TL104]\n") == ["TL101"]


def test_first_line_of_multiline_call():
    assert codes("DataLoader(  # noqa: TL101\n    ds,\n)\n") == []
    assert codes("DataLoader(\n    ds,\n)  # noqa: TL101\n") == ["TL101"]


def test_file_level():
    assert codes("# trainlint: noqa\nDataLoader(ds)\n") == []
    assert codes("# trainlint: noqa: TL104\nDataLoader(ds)\n") == ["TL101"]


def test_file_level_suppression_after_code_suppresses_nothing():
    # It switched trainlint off for the whole file (or for its codes), silently; as in Ruff, a
    # file-level comment counts only on a line of its own, and this one is not a line suppression either.
    assert codes("a = DataLoader(ds)  # trainlint: noqa\nb = DataLoader(ds)\n") == ["TL101", "TL101"]
    assert codes("a = DataLoader(ds)  # trainlint: noqa: TL101\nb = DataLoader(ds)\n") == ["TL101", "TL101"]
    # Indented, on its own line, it is still file-level.
    assert codes("if x:\n    # trainlint: noqa: TL101\n    a = DataLoader(ds)\nb = DataLoader(ds)\n") == []


def test_noqa_without_colon_is_still_blanket_and_warned_about():
    from trainlint.suppressions import MISSING_COLON, MISPLACED_FILE_LEVEL, problem_warning, problems

    assert codes("DataLoader(ds, num_workers=2)  # noqa TL101\n") == []  # flake8's and Ruff's reading
    text = "x = 1  # noqa TL101\ny = 2  # noqa:\nz = 3  # noqa because\nw = 4  # noqa: TL101\nv = 5  # trainlint: noqa\n"
    found = problems(text)
    assert [(d.row, p) for d, p in found] == [(1, MISSING_COLON), (2, MISSING_COLON), (5, MISPLACED_FILE_LEVEL)]
    assert [problem_warning("a.py", text, d, p) for d, p in found] == [
        "warning: Invalid `# noqa` directive on a.py:1: expected `:` followed by a comma-separated list of codes "
        "(e.g. `# noqa: TL101`); it suppresses every rule on the line.",
        "warning: Invalid `# noqa` directive on a.py:2: expected a comma-separated list of codes after `:` "
        "(e.g. `# noqa: TL101`); it suppresses every rule on the line.",
        "warning: Unexpected `# trainlint: noqa` directive at a.py:5, after code: it suppresses nothing. File-level "
        "suppression comments must appear on their own line. For line-level suppression, write `# noqa`.",
    ]
    assert problems("x = 1  # noqa: TL101, E501\n# trainlint: noqa: TL2\n") == []


def test_noqa_inside_a_string_is_not_a_suppression():
    assert codes("DataLoader(ds, x='# noqa')\n") == ["TL101"]


def test_a_finding_inside_a_multiline_string_is_suppressed_where_the_string_ends():
    # As in Ruff: no comment can stand on the string's other lines.
    text = 'x = f"""{DataLoader(ds)}\nmore"""  # noqa: TL101\n'
    assert codes(text) == []
    assert codes('x = f"""{DataLoader(ds)}\nmore"""\n') == ["TL101"]
    # Two strings in a row: the comment goes where the last one ends.
    assert codes('x = f"""{DataLoader(ds)}\n""" + """a\nb"""  # noqa: TL101\n') == []
    # A multi-line call is not a string: its first line still takes the comment.
    assert codes("DataLoader(\n    ds,\n)  # noqa: TL101\n") == ["TL101"]
