"""TL107 heavy-getitem: `Dataset.__getitem__`/`__iter__` that tokenizes text or decodes images/audio
per sample."""

from __future__ import annotations

import re

import libcst as cst

from trainlint.analysis.batches import (
    MOVES_TENSORS,
    dataset_builds,
    heavy_work,
    loader_calls,
    resolve_callable,
    sample_work,
)
from trainlint.rule import NO_FIX, Invalid, Rule, Valid

from .cases import SHARDED, STREAM, UNSHARDED, WORKERS_SET
from .tl101_dataloader_no_workers import DataLoaderNoWorkers
from .workers import add_workers_fix, workers_advice, workers_value


DATASETS = ("torch.utils.data.Dataset", "torch.utils.data.IterableDataset")


_CACHE = re.compile(r"cache", re.IGNORECASE)


def _loaders_using(ctx, predicate) -> list[cst.Call]:
    return [c for c in loader_calls(ctx) if predicate(c)]


class HeavyGetitem(Rule):
    code = "TL107"
    name = "heavy-getitem"
    summary = "`Dataset.__getitem__`/`__iter__` that tokenizes text or decodes images/audio per sample"
    source = "§3, §6.2"
    fix_applicability = "unsafe"
    triggers = ("__getitem__", "__iter__", "set_transform", "with_transform")
    options = DataLoaderNoWorkers.options
    docs = """
## What it does
Flags a dataset's `__getitem__` (map-style) or `__iter__` (iterable) that tokenizes text,
decodes images or audio, or extracts audio features (a transformers feature extractor or a
processor given `sampling_rate=`, `librosa.feature.*`, `torchaudio.compliance.kaldi.fbank`, a
spectrogram by `torch.stft`, a torchaudio transform such as `MelSpectrogram`, also one built in
`__init__` as `self.melspec` and called per sample) for every sample, itself or in a method of its class (or of a base class
in the same module) that it calls, up to two calls down (`self.load_image(i)`).
A tokenizer is recognised whatever its name: by its method (`encode`, `encode_plus`, tiktoken's
`encode_ordinary`/`encode_batch`, SentencePiece's `EncodeAsIds`/`encode_as_pieces`), by a keyword
only a Hugging Face tokenizer takes (`self.tok(text, truncation=True)`), or by what built it
(`tiktoken.get_encoding(...)`, `AutoTokenizer.from_pretrained(...)`, `SentencePieceProcessor(...)`),
also when handed to the dataset's constructor and kept (`self.tok = tok`) where every construction
of the dataset in the file hands it such an object; a Hugging Face processor given `text=` (one
named `processor`, or built as `AutoProcessor.from_pretrained(...)`) tokenizes too. A module such
as `self.encoder(x)`, or a callable handed in that is not known to be a tokenizer, is none.

Also flags a function given to Hugging Face datasets' `ds.set_transform(fn)` or
`ds.with_transform(fn)` (a function of the module, a lambda, `functools.partial` of one) that does
this work: the dataset runs it in its `__getitem__` at every access. Its finding has no fix.

## Why is this bad?
This work is repeated every epoch for every sample, and with few or no workers it is what the GPU
waits on. Doing it once, offline, turns the loader into cheap reads.

## Example
```python
class TextDataset(Dataset):
    def __getitem__(self, i):
        return self.tokenizer(self.texts[i], truncation=True)["input_ids"]
```

## Use instead
Tokenize once and store token ids in a binary array (e.g. `np.memmap`); store decoded, resized
image tensors (or use GPU decoding), log-mel features computed once; `__getitem__` then only slices.

## Fix safety
Unsafe: where a loader of this dataset runs in the main process, the fix adds workers as TL101,
and, as there, not to an iterable dataset of this module that does not split its stream between
workers (each would replay every sample; the message says so). The offline conversion is yours to
make: for a `set_transform`/`with_transform` function, `ds.map(fn, batched=True)`, which runs it once
and caches what it returns (no fix).
"""
    # A callable handed to the dataset's constructor and kept (`self.tok = tok`).
    _HANDED = ("import torch, tiktoken\nfrom transformers import AutoTokenizer, AutoProcessor\n"
               "from torch.utils.data import Dataset, DataLoader\nclass DS(Dataset):\n"
               "    def __init__(self, texts, tok):\n        self.texts = texts\n        self.tok = tok\n"
               "    def __getitem__(self, i):\n        return {body}\n"
               "tok = {made}\nds = DS(texts, tok)\nloader = DataLoader(ds, num_workers=2)\n")
    _SRC = "import os\nfrom torch.utils.data import Dataset, DataLoader\nclass DS(Dataset):\n    def __getitem__(self, i):\n        {body}\nloader = DataLoader(DS(){args})\n"
    valid = [
        Valid(_SRC.format(body="return self.ids[i]", args="")),
        Valid(_SRC.format(body="return torch.from_numpy(self.arr[i])", args="")),
        Valid("class Vocab:\n    def __getitem__(self, tok):\n        return self.tokenizer(tok)\n"),
        Valid(_SRC.format(body="return self.data[i] * 2", args=", num_workers=4")),
        # A module named like an encoder is no tokenizer, nor a tokenizer's `decode`.
        Valid(_SRC.format(body="return self.encoder(self.x[i])", args=", num_workers=4")),
        Valid("import tiktoken\nfrom torch.utils.data import Dataset, DataLoader\nclass DS(Dataset):\n"
              "    def __init__(self):\n        self.e = tiktoken.get_encoding('gpt2')\n"
              "    def __getitem__(self, i):\n        return self.e.decode(self.ids[i])\n"
              "loader = DataLoader(DS(), num_workers=2)\n"),
        # An image processor (no sampling rate) and stored features read back: not audio extraction.
        Valid(_SRC.format(body="return self.processor(images=self.images[i], return_tensors='pt')", args=", num_workers=2")),
        Valid(_SRC.format(body="return self.features[i], self.feature_extractor.sampling_rate", args=", num_workers=2")),
        # Work that refills a cache, and a file handle opened per sample: not decoding every sample.
        Valid(_SRC.format(body="if len(self.cache) == 0:\n            self.cache = [Image.open(p) for p in self.paths]\n"
                               "        return self.cache.pop()", args=", num_workers=2")),
        Valid(_SRC.format(body="with open(self.paths[i]) as f:\n            return f.read()", args=", num_workers=2")),
        Valid(_SRC.format(body="if i not in self.image_cache:\n            self.image_cache[i] = Image.open(self.paths[i])\n"
                               "        return self.image_cache[i]", args=", num_workers=2")),
        # An on-access transform that only reshapes or augments what the dataset already holds.
        Valid("def to_tensors(batch):\n    return {'x': [torch.tensor(v) for v in batch['x']]}\n"
              "ds = load_dataset('mnist', split='train')\nds.set_transform(to_tensors)\n"),
        # A method that only slices, and a same-named function outside the class that decodes.
        Valid("import cv2\nfrom torch.utils.data import Dataset\ndef load_image(p):\n    return cv2.imread(p)\n"
              "class DS(Dataset):\n    def load_image(self, i):\n        return self.images[i]\n"
              "    def __getitem__(self, i):\n        return self.load_image(i)\n"),
        # A callable handed in and stored is not a tokenizer unless every construction hands one:
        # a transform, a module, or a tokenizer in one construction only.
        Valid(_HANDED.format(made="lambda t: t", body="self.tok(self.texts[i])")),
        Valid(_HANDED.format(made="torch.nn.Identity()", body="self.tok(self.texts[i])")),
        Valid(_HANDED.format(made="AutoTokenizer.from_pretrained('gpt2')", body="self.tok(self.texts[i])")
              + "other = DS(texts, lambda t: t)\n"),
        # A processor given images only tokenizes nothing.
        Valid(_SRC.format(body="return self.processor(images=self.images[i])", args=", num_workers=2")),
    ]
    invalid = [
        # A tokenizer handed to the constructor and called plainly (`self.tok(t)`): recognised by
        # what every construction hands in. It was missed unless called with a keyword only Hugging
        # Face's tokenizer takes.
        Invalid(_HANDED.format(made="AutoTokenizer.from_pretrained('gpt2')", body="self.tok(self.texts[i])"),
                fixed=NO_FIX, message="tokenizes text"),
        Invalid(_HANDED.format(made="tiktoken.get_encoding('gpt2')", body="self.tok(self.texts[i])")
                .replace("ds = DS(texts, tok)", "ds = DS(tok=tok, texts=texts)"), fixed=NO_FIX, message="tokenizes text"),
        # A Hugging Face processor given text (it was missed too): by its name, or what built it.
        Invalid(_SRC.format(body="return self.processor(text=self.texts[i], images=self.images[i])", args=", num_workers=2"),
                fixed=NO_FIX, message="tokenizes text"),
        Invalid(_HANDED.format(made="AutoProcessor.from_pretrained('clip')", body="self.tok(text=self.texts[i])"),
                fixed=NO_FIX, message="tokenizes text"),
        Invalid(_SRC.format(body="return self.tokenizer(self.texts[i])", args=""),
                fixed=_SRC.format(body="return self.tokenizer(self.texts[i])",
                                  args=", num_workers=min(8, os.cpu_count() or 1)")),
        # Tokenizers not named `tokenizer` (before, only that name was recognised): by a keyword
        # only a Hugging Face tokenizer takes, by the method's name (tiktoken's `encode_ordinary`,
        # `encode_batch`; SentencePiece's `EncodeAsIds`), or by what built the object.
        Invalid(_SRC.format(body="return self.tok(self.texts[i], truncation=True, max_length=512)", args=", num_workers=2"),
                fixed=NO_FIX, message="tokenizes text"),
        Invalid(_SRC.format(body="return self.enc.encode_ordinary(self.texts[i])", args=", num_workers=2"),
                fixed=NO_FIX, message="tokenizes text"),
        Invalid(_SRC.format(body="return self.enc.encode_batch([self.texts[i]])", args=", num_workers=2"),
                fixed=NO_FIX, message="tokenizes text"),
        Invalid(_SRC.format(body="return self.sp.EncodeAsIds(self.texts[i])", args=", num_workers=2"),
                fixed=NO_FIX, message="tokenizes text"),
        Invalid(_SRC.format(body="return self.sp.encode_as_ids(self.texts[i])", args=", num_workers=2"),
                fixed=NO_FIX, message="tokenizes text"),
        Invalid("import tiktoken\nfrom transformers import AutoTokenizer\nfrom torch.utils.data import Dataset, DataLoader\n"
                "class DS(Dataset):\n    def __init__(self):\n        self.tk = AutoTokenizer.from_pretrained('gpt2')\n"
                "    def __getitem__(self, i):\n        return self.tk(self.texts[i])\n"
                "loader = DataLoader(DS(), num_workers=2)\n", fixed=NO_FIX, message="tokenizes text"),
        Invalid("import tiktoken\nfrom torch.utils.data import Dataset, DataLoader\nclass DS(Dataset):\n"
                "    def __init__(self):\n        self.e = tiktoken.get_encoding('gpt2')\n"
                "    def __getitem__(self, i):\n        return self.e.encode_with_special_tokens(self.texts[i])\n"
                "loader = DataLoader(DS(), num_workers=2)\n", fixed=NO_FIX, message="tokenizes text"),
        # A loader with workers already: reported, no fix (the offline conversion is the user's).
        Invalid(_SRC.format(body="return Image.open(self.paths[i])", args=", num_workers=2"), fixed=NO_FIX),
        # Audio features (log-mel, fbank) computed per clip, as tokenizing is for text: a
        # transformers feature extractor, a processor given a sampling rate, librosa, kaldi.
        Invalid(_SRC.format(body="return self.feature_extractor(self.clips[i], sampling_rate=16000).input_features[0]",
                            args=", num_workers=2"), fixed=NO_FIX,
                message="extracts audio features for every sample, every epoch; store the features computed once"),
        Invalid(_SRC.format(body="return self.processor(self.clips[i]['array'], sampling_rate=16000, return_tensors='pt')",
                            args=", num_workers=2"), fixed=NO_FIX, message="extracts audio features"),
        Invalid("import librosa\n" + _SRC.format(body="return librosa.feature.melspectrogram(y=self.clips[i], sr=16000)",
                                                 args=", num_workers=2"), fixed=NO_FIX, message="extracts audio features"),
        Invalid("import torchaudio\n" + _SRC.format(body="return torchaudio.compliance.kaldi.fbank(self.clips[i])",
                                                    args=", num_workers=2"), fixed=NO_FIX, message="extracts audio features"),
        # A spectrogram per clip (torch.stft), and a torchaudio transform built in __init__ and
        # called per sample.
        Invalid("import torch\n" + _SRC.format(body="return torch.stft(self.clips[i], 400, return_complex=True).abs()",
                                                args=", num_workers=2"), fixed=NO_FIX, message="extracts audio features"),
        Invalid("import torchaudio\n" + _SRC.format(body="return self.melspec(self.clips[i])", args=", num_workers=2")
                .replace("class ", "class Base:\n    def __init__(self):\n"
                         "        self.melspec = torchaudio.transforms.MelSpectrogram(n_mels=64)\nclass ", 1),
                fixed=NO_FIX, message="extracts audio features"),
        Invalid(_SRC.format(body="return self.tok.encode(self.texts[i])", args=""),
                fixed=_SRC.format(body="return self.tok.encode(self.texts[i])",
                                  args=", num_workers=min(8, os.cpu_count() or 1)")),
        # A cache mode that is off by default decodes every sample (ultralytics' `cache="disk"`).
        Invalid(_SRC.format(body="if self.cache == 'disk':\n            return np.load(self.npy[i])\n"
                                 "        return cv2.imread(self.paths[i])", args=", num_workers=2"), fixed=NO_FIX),
        # An iterable dataset that does not split its stream by worker: workers would each replay it.
        Invalid(STREAM.format(helper="", body=UNSHARDED.replace("torch.load(p)", "torchaudio.load(p)"), options=""),
                fixed=NO_FIX, message="no workers added: `Stream` is an IterableDataset that does not split"),
        Invalid(STREAM.format(helper="", body=SHARDED.replace("torch.load(p)", "torchaudio.load(p)"), options=""),
                fixed=STREAM.format(helper="", body=SHARDED.replace("torch.load(p)", "torchaudio.load(p)"),
                                     options=WORKERS_SET)),
        # No loader of the dataset here: no workers to add.
        Invalid("from torch.utils.data import IterableDataset\nclass S(IterableDataset):\n    def __iter__(self):\n"
                "        for p in self.paths:\n            yield torchaudio.load(p)\n", fixed=NO_FIX),
        # Hugging Face datasets' on-access transforms run in the dataset's `__getitem__` at every
        # access (before, only a `__getitem__` of the file's own was read): reported on the work,
        # with no fix; `.map(..., batched=True)` tokenizes once.
        Invalid("def tokenize(batch):\n    return tokenizer(batch['text'], truncation=True)\n"
                "ds = load_dataset('imdb', split='train')\nds.set_transform(tokenize)\n"
                "loader = DataLoader(ds, batch_size=32)\n", fixed=NO_FIX,
                message="`tokenize` given to `set_transform` tokenizes text for every sample at every access"),
        Invalid("ds = load_dataset('imdb', split='train').with_transform(lambda b: tokenizer(b['text']))\n",
                fixed=NO_FIX, message="the lambda given to `with_transform` tokenizes text"),
        # yolov5's shape: the decode sits in a method of the class (or of a base class here) that
        # __getitem__ calls, one or two calls down; the finding is on __getitem__'s own line.
        Invalid("import cv2\nfrom torch.utils.data import Dataset\nclass Images(Dataset):\n"
                "    def load_image(self, i):\n        return cv2.imread(self.files[i])\n"
                "class Mosaic(Images):\n    def load_mosaic(self, i):\n        return [self.load_image(j) for j in (i, i + 1)]\n"
                "    def __getitem__(self, i):\n        img = self.load_mosaic(i) if self.mosaic else self.load_image(i)\n"
                "        return img\n", fixed=NO_FIX, message="(in `self.load_image`)"),
    ]

    def __init__(self, ctx, options) -> None:
        super().__init__(ctx, options)
        self._reported: set[cst.Call] = set()  # a transform given to two datasets is reported once

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        ctx = self.ctx
        if node.name.value not in ("__getitem__", "__iter__") or ctx.is_offline_script:
            return
        cls = ctx.index.enclosing_class(node)
        if cls is None or not ctx.names.is_a(cst.Name(cls.name.value), *DATASETS):
            return
        found = sample_work(ctx, cls, node, lambda kind: kind != MOVES_TENSORS,
                            skip=lambda call, fn: _fills_cache(ctx, call, fn))
        if found is None:
            return
        call, kind, method = found
        offline = ("token ids in a binary array / memmap" if "text" in kind or "token" in kind else
                   "the features computed once (a memmap of log-mel frames)" if "features" in kind else
                   "the decoded waveforms (or log-mel features), saved once as tensors or a memmap" if "audio" in kind else
                   "the decoded, resized images, saved once as tensors or a memmap")
        where = f" (in `self.{method.name.value}`)" if method is not node else ""
        message = (f"`{cls.name.value}.{node.name.value}` {kind}{where} for every sample, every epoch; store "
                   f"{offline} and only slice here")
        fix = None
        loaders = _loaders_using(ctx, lambda c: any(ctx.dotted(b.func) == cls.name.value for b in dataset_builds(ctx, c)))
        idle = [c for c in loaders if workers_value(ctx, c) == 0 and not ctx.hides_arguments(c)]
        if idle:
            fix = add_workers_fix(self, idle[0])
            replay = workers_advice(ctx, idle[0])
            message += f"; no workers added: {replay}" if replay else ""
        self.report(call, message, fix)

    def visit_Call(self, node: cst.Call) -> None:
        """Hugging Face datasets' `ds.set_transform(fn)` / `ds.with_transform(fn)`: the dataset's
        `__getitem__` runs fn at every access, so tokenizing there is per-sample work every epoch,
        as in a `__getitem__` of the file's own; `ds.map(fn, batched=True)` does it once and caches
        it. Reported on fn's call, with no fix (the loader may take any dataset)."""
        ctx = self.ctx
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in _ON_ACCESS) or ctx.is_offline_script:
            return
        arg = ctx.positional(node, 0) or ctx.keyword(node, "transform")
        if arg is None or arg.star:
            return
        transform = resolve_callable(ctx, arg.value)
        if transform is None:
            return
        work = [(c, k) for c, k in heavy_work(ctx, transform, masks=False) if k != MOVES_TENSORS]
        if not work:
            return
        call, kind = work[0]
        offline = ("`map(..., batched=True)`, which runs it once and caches the token ids" if "text" in kind or "token" in kind
                   else "`map(...)` once, caching the result")
        if call in self._reported:
            return  # one function given to several datasets: one finding
        self._reported.add(call)
        name = "the lambda" if isinstance(transform, cst.Lambda) else f"`{transform.name.value}`" \
            if transform.name.value != "__call__" else f"`{ctx.index.enclosing_class(transform).name.value}`"
        self.report(call, f"{name} given to `{func.attr.value}` {kind} for every sample at every access, every epoch; "
                          f"do it with {offline} (not fixed: the offline conversion is yours to make)", None)


# Hugging Face datasets' methods that set a transform run at every access (`__getitem__`).
_ON_ACCESS = frozenset({"set_transform", "with_transform"})


def _fills_cache(ctx, node: cst.CSTNode, fn: cst.FunctionDef) -> bool:
    """node runs under an `if` (in fn) that asks whether a cache holds something
    (`if len(self.cache) == 0:`, `if key not in cache:`, `if self.cache is None:`, `if not cache:`):
    once per cache miss, not for every sample. A mode test (`if self.cache == "disk":`) is not one."""
    for anc in ctx.index.ancestors(node):
        if anc is fn:
            return False
        if isinstance(anc, cst.If) and _asks_cache(ctx, anc.test):
            return True
    return False


def _asks_cache(ctx, test: cst.BaseExpression) -> bool:
    def is_cache(expr) -> bool:
        return bool(_CACHE.search((ctx.dotted(expr) or "").rsplit(".", 1)[-1]))

    for n in ctx.index.walk(test):
        if isinstance(n, cst.Call) and ctx.dotted(n.func) == "len" and n.args and is_cache(n.args[0].value):
            return True
        if isinstance(n, cst.UnaryOperation) and isinstance(n.operator, cst.Not) and is_cache(n.expression):
            return True
        if isinstance(n, cst.Comparison) and any(
                isinstance(t.operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot))
                and (is_cache(t.comparator) or is_cache(n.left)) for t in n.comparisons):
            return True
    return False
