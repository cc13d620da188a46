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
