"""Loader rules where what decides is the file's path, which rule cases (written as `case.py`)
cannot set."""

from trainlint.api import lint_source

# A test helper's loader over a synthetic dataset, read for its values (timm's prefetcher test).
_VALUES = ("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n\n"
           "def test_batches_keep_their_order():\n"
           "    loader = DataLoader(TensorDataset(torch.arange(8)), batch_size=4)\n"
           "    assert [b[0].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]\n")
# The same loader in a test that trains on it.
_TRAINS = _VALUES + ("\n\ndef test_training_lowers_the_loss():\n"
                     "    loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)\n"
                     "    for (x,) in loader:\n        model(x).sum().backward()\n        opt.step()\n")


def _codes(code, path):
    return [(d.code, d.start.row) for d in lint_source(code, path=path, select=["TL101"])]


def test_tl101_leaves_the_loader_of_a_test_that_trains_nothing_alone():
    assert _codes(_VALUES, "data.py") == [("TL101", 6)]
    for path in ("tests/test_data.py", "test_data.py", "data_test.py", "pkg/tests/helpers.py"):
        assert _codes(_VALUES, path) == [], path


# A test's evaluation pass: the model runs on the batches.
_EVALUATES = ("\n\ndef test_evaluation_runs():\n"
              "    loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)\n"
              "    for (x,) in loader:\n        outputs.append(model(x))\n")


def test_tl101_reports_the_training_loaders_of_a_test_module():
    """In a test module that trains, the loader a training loop goes over is reported, and one
    whose batches a model runs on (an evaluation pass of a fine-tuning script named test_*.py);
    one whose batches only feed assertions is not, as in a module that trains nothing
    (accelerate's test_sync.py and test_script.py check sharding and seeds beside tests that train)."""
    assert _codes(_TRAINS + _EVALUATES, "tests/test_train.py") == [("TL101", 11), ("TL101", 18)]
    assert _codes(_TRAINS + _EVALUATES, "train.py") == [("TL101", 6), ("TL101", 11), ("TL101", 18)]


# A test's loader that is never iterated: only its sampler is checked after prepare re-binds it
# (accelerate's test_script.py, the custom batch sampler check).
_INSPECTS = ("\n\ndef test_prepare_keeps_the_sampler():\n"
             "    dl = DataLoader(TensorDataset(torch.randn(8, 2)), batch_sampler=sampler)\n"
             "    dl = prepare_data_loader(dl, device, 2, 0)\n"
             "    assert isinstance(dl.batch_sampler, type(sampler))\n")
# ... and one handed to a function the file does not show, which may iterate it.
_HANDS_ON = ("\n\ndef test_evaluate_helper():\n"
             "    dl = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)\n"
             "    assert evaluate(model, dl) < 1.0\n")


def test_tl101_leaves_a_test_loader_that_is_never_iterated_alone():
    """A loader of a test module that trains, which no pass goes over and whose names stay in
    sight (only its attributes read, re-bound by a loader wrapper) is only inspected; one handed
    to a function the file does not show may be iterated there, and is reported."""
    assert _codes(_TRAINS + _INSPECTS + _HANDS_ON, "tests/test_train.py") == [("TL101", 11), ("TL101", 24)]
    assert _codes(_TRAINS + _INSPECTS, "train.py") == [("TL101", 6), ("TL101", 11), ("TL101", 18)]
    # Returned by a fixture, alone or beside other values: its callers may go over it.
    for returned in ("dl", "dl, model", "{'loader': dl, 'model': model}"):
        returns = ("\n\ndef make_fixture():\n    dl = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)\n"
                   f"    return {returned}\n")
        assert _codes(_TRAINS + returns, "tests/test_train.py") == [("TL101", 11), ("TL101", 18)], returned
    # Returned to a test of the file that only inspects it, alone or beside other values: the
    # return is followed there (accelerate's test_peak_memory_usage.py prepares its evaluation
    # loader, returned beside the training one, and never goes over it).
    for returned in ("dl", "dl, model"):
        made = ("\n\ndef make_loader():\n    dl = DataLoader(TensorDataset(torch.randn(8, 2)), batch_sampler=sampler)\n"
                f"    return {returned}\n")
        inspects = _INSPECTS.replace("    dl = DataLoader(TensorDataset(torch.randn(8, 2)), batch_sampler=sampler)\n",
                                     f"    {returned} = make_loader()\n")
        assert _codes(_TRAINS + made + inspects, "tests/test_train.py") == [("TL101", 11)], returned
    # Kept on a test case (`self.dl`): a subclass in another module may go over it.
    kept = ("\n\nclass LoaderCase:\n    def setUp(self):\n"
            "        self.dl = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)\n")
    assert _codes(_TRAINS + kept, "tests/test_train.py") == [("TL101", 11), ("TL101", 19)]
