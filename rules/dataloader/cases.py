"""Scripts several TL1xx rules' self-test cases share (each rule's own live beside it)."""

from __future__ import annotations


# A dataset that hands out samples already on the device (its tensors moved in __getitem__, or
# stored there by __init__): its loader's batches need no pinning, and workers would start CUDA.
ON_DEVICE = (
    "import torch\nfrom torch.utils.data import DataLoader, Dataset\n"
    "class OnDevice(Dataset):\n"
    "    def __init__(self, x, y):\n        self.x, self.y = x, y\n"
    "    def __getitem__(self, i):\n        return self.x[i].to('cuda'), self.y[i].to('cuda')\n"
    "loader = DataLoader(OnDevice(X, Y), batch_size=64{options})\n"
    "for xb, yb in loader:\n    loss = model(xb.to('cuda'), yb.to('cuda'))\n    loss.backward()\n    opt.step()\n"
)
# A dataset that moves its items to the device through a function of the module ({item}:
# `to_dev(x)`, `prepare(x)` two calls down) or a transform it is handed and applies in __getitem__
# ({transform}: `transform=lambda t: t.to(device)`, `transform=to_dev`); its loader is {loader}.
MOVED_BY_HELPER = (
    "import torch\nfrom torch.utils.data import DataLoader, Dataset\ndevice = torch.device('cuda')\n"
    "def to_dev(t):\n    return t.to(device)\ndef prepare(t):\n    return to_dev(t.float())\n"
    "class Wrapped(Dataset):\n    def __init__(self, data, transform=None):\n"
    "        self.data, self.transform = data, transform\n    def __len__(self):\n        return len(self.data)\n"
    "    def __getitem__(self, i):\n        x = self.data[i]\n        if self.transform is not None:\n"
    "            x = self.transform(x)\n        return {item}\n"
    "{loader}\nfor xb in loader:\n    loss = model(xb.to(device))\n    loss.backward()\n    opt.step()\n"
)
# Loaders built through `functools.partial(DataLoader, ...)` ({options} more of its keywords), the
# training one by `make(ds{call})`.
PARTIAL = (
    "import functools\nfrom torch.utils.data import DataLoader\n"
    "make = functools.partial(DataLoader, batch_size=8, shuffle=True{options})\n"
    "def main():\n    loader = make(ds{call})\n    for epoch in range(3):\n        for x, y in loader:\n"
    "            loss = model(x.cuda(), y.cuda())\n            loss.backward()\n            opt.step()\n"
)
# An iterable dataset of this module, and its loader; the tester's stream doubled its samples with 2 workers.
STREAM = (
    "import os\nimport torch\nfrom torch.utils.data import DataLoader, IterableDataset, get_worker_info\n{helper}"
    "class Stream(IterableDataset):\n    def __init__(self, paths):\n        self.paths = paths\n"
    "    def __iter__(self):\n{body}"
    "loader = DataLoader(Stream(paths){options})\n"
)
UNSHARDED = "        for p in self.paths:\n            yield torch.load(p)\n"
SHARDED = ("        info = get_worker_info()\n        paths = self.paths if info is None else "
            "self.paths[info.id::info.num_workers]\n        for p in paths:\n            yield torch.load(p)\n")
SEEDED = ("        info = get_worker_info()\n        rng = random.Random(0 if info is None else info.seed)\n"
           "        for p in self.paths:\n            yield augment(torch.load(p), rng)\n")
LEFTOVER = ("    def _unused(self):\n        info = get_worker_info()\n"
             "        return self.paths if info is None else self.paths[info.id::info.num_workers]\n")
SHARD_HELPER = ("def shard(items):\n    info = torch.utils.data.get_worker_info()\n"
                 "    return items if info is None else items[info.id::info.num_workers]\n")
WORKERS_SET = ", num_workers=min(8, os.cpu_count() or 1)"
# A dataset built from tensors on the device (the tester's TensorDataset of `X.to(device)`).
TENSORS_ON_DEVICE = (
    "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
    "device = torch.device('cuda')\n{data}"
    "loader = DataLoader({dataset}, batch_size=64{options})\n"
    "for xb, yb in loader:\n    loss = model(xb.to(device), yb.to(device))\n    loss.backward()\n    opt.step()\n"
)
STORED_ON_DEVICE = ON_DEVICE.replace("self.x, self.y = x, y", "self.x, self.y = x.cuda(), y.cuda()").replace(
    "return self.x[i].to('cuda'), self.y[i].to('cuda')", "return self.x[i], self.y[i]")


# A script that trains when run, through a function it calls at its top level.
TOP_LEVEL = (
    "from torch.utils.data import DataLoader\n"
    "def train(loader):\n"
    "    for x, y in loader:\n"
    "        model(x, y).backward()\n"
    "        opt.step()\n"
    "def main():\n"
    "    train(DataLoader(ds))\n"
    "main()\n"
)
# A loader built inside a function, with what comes {before} it.
LOCAL_FUNCTION = (
    "import functools\nimport os\nimport torch\nfrom torch.utils.data import DataLoader\ndef main(ds, base, rows, root):\n"
    "{before}    loader = DataLoader({ds}{options})\n    for b in loader:\n        model(b).backward()\n        opt.step()\n"
)
GUARDED = TOP_LEVEL.replace("main()\n", "if __name__ == '__main__':\n    main()\n")


# One function that both loaders go through, stepping only when handed an optimizer: `a` trains,
# `b` does not (their names do not say).
SHARED_EPOCH = (
    "from torch.utils.data import DataLoader\n"
    "def run_epoch(model, loader, device, optimizer=None):\n"
    "    training = optimizer is not None\n"
    "    for x, y in loader:\n"
    "        x = x.to(device)\n"
    "        loss = model(x, y)\n"
    "        if training:\n"
    "            loss.backward()\n"
    "            optimizer.step()\n"
    "a = DataLoader(ds, batch_size=8, shuffle=True{a})\n"
    "b = DataLoader(vs, batch_size=8, shuffle=True{b})\n"
    "for epoch in range(3):\n"
    "    run_epoch(model, a, device, opt)\n"
    "    run_epoch(model, b, device)\n"
)
# The same, leaving the loop before the step when not training (`if not training: continue`).
SHARED_EPOCH_GUARD = SHARED_EPOCH.replace(
    "        if training:\n            loss.backward()\n            optimizer.step()\n",
    "        if not training:\n            continue\n        loss.backward()\n        optimizer.step()\n")
# A trainer class: the loader built in __init__, wrapped in a progress bar by the method that
# trains, which fit() calls every epoch.
TRAINER_CLASS = (
    "from torch.utils.data import DataLoader\n"
    "from tqdm import tqdm\n"
    "class Trainer:\n"
    "    def __init__(self, ds):\n"
    "        self.train_loader = DataLoader(ds, num_workers=4{options})\n"
    "    def train_epoch(self):\n"
    "        pbar = tqdm(self.train_loader)\n"
    "        for x, y in pbar:\n"
    "            loss = self.model({x}, y)\n"
    "            loss.backward()\n"
    "            self.opt.step()\n"
    "    def fit(self, epochs):\n"
    "        for epoch in range(epochs):\n"
    "            self.train_epoch()\n"
)
# A trainer class whose fit() takes the loader, built and called by the script.
FIT_METHOD = (
    "from torch.utils.data import DataLoader\n"
    "class Trainer:\n"
    "    def fit(self, loader, epochs):\n"
    "        for epoch in range(epochs):\n"
    "            for x, y in loader:\n"
    "                loss = self.model({x}, y)\n"
    "                loss.backward()\n"
    "                self.opt.step()\n"
    "loader = DataLoader(ds, num_workers=4{options})\n"
    "{call}\n"
)
# One loop over (phase, loader) pairs, stepping in the "train" phase only: `a` trains, `b` does not.
PHASES = (
    "from torch.utils.data import DataLoader\n"
    "a = DataLoader(ds, batch_size=8, shuffle=True{a})\n"
    "b = DataLoader(vs, batch_size=8, shuffle=True{b})\n"
    "for epoch in range(3):\n"
    "    for phase, loader in [('train', a), ('val', b)]:\n"
    "        for x, y in loader:\n"
    "            loss = model(x.cuda(), y)\n"
    "            if phase == 'train':\n"
    "                loss.backward()\n"
    "                opt.step()\n"
)
# A training function nested in main, reading main's pinned loader.
CLOSURE = (
    "from torch.utils.data import DataLoader\n"
    "def main(epochs):\n"
    "    loader = DataLoader(ds, num_workers=2, pin_memory=True)\n"
    "    def train_epoch():\n"
    "        for x, y in loader:\n"
    "            model({x}, y).backward()\n"
    "            opt.step()\n"
    "    for epoch in range(epochs):\n"
    "        train_epoch()\n"
)
# A dict of loaders picked by phase, stepping in the "train" phase only.
PHASE_KEYS = (
    "from torch.utils.data import DataLoader\n"
    "loaders = {{\n"
    "    'train': DataLoader(ds, shuffle=True{a}),\n"
    "    'val': DataLoader(vs, shuffle=True{b}),\n"
    "}}\n"
    "for epoch in range(3):\n"
    "    for phase in ['train', 'val']:\n"
    "        for x, y in loaders[phase]:\n"
    "            loss = model(x.cuda(), y)\n"
    "            if phase == 'train':\n"
    "                loss.backward()\n"
    "                opt.step()\n"
)
# The same, the loader picked into a name first; and the pairs loop over zipped displays.
PHASE_PICKED = PHASE_KEYS.replace("        for x, y in loaders[phase]:\n",
                                    "        loader = loaders[phase]\n        for x, y in loader:\n")
PHASES_ZIP = PHASES.replace("[('train', a), ('val', b)]", "zip(['train', 'val'], [a, b])")
# Loaders returned in a dict by a helper, the training one picked by its key.
RETURNED_DICT = (
    "from torch.utils.data import DataLoader\n"
    "def build(cfg):\n"
    "    return {{\n"
    "        'train': DataLoader(cfg.train, shuffle=True{a}),\n"
    "        'val': DataLoader(cfg.val{b}),\n"
    "    }}\n"
    "def main(cfg):\n"
    "    loaders = build(cfg)\n"
    "    train_loader = loaders['train']\n"
    "    for epoch in range(10):\n"
    "        for x, y in train_loader:\n"
    "            loss = model(x.cuda(), y)\n"
    "            loss.backward()\n"
    "            opt.step()\n"
)
DRAWN = (
    "from torch.utils.data import DataLoader\n"
    "loader = DataLoader(ds, shuffle=True{pin})\n"
    "data_iter = iter(loader)\n"
    "for step in range(1000):\n"
    "    try:\n"
    "        x, y = next(data_iter)\n"
    "    except StopIteration:\n"
    "        data_iter = iter(loader)\n"
    "        x, y = next(data_iter)\n"
    "    loss = model({x}, y)\n"
    "    loss.backward()\n"
    "    opt.step()\n"
)
# A new iterator over the loader for every batch: a pass, and new workers, at every step.
FRESH = (
    "from torch.utils.data import DataLoader\n"
    "def main(ds):\n"
    "    loader = DataLoader(ds, shuffle=True{opts})\n"
    "    print(len(loader))\n"
    "    for step in range(1000):\n"
    "        x, y = next(iter(loader))\n"
    "        loss = model(x, y)\n"
    "        loss.backward()\n"
    "        opt.step()\n"
)
# Two loaders held in one dict and picked by their keys; only "a" trains.
BY_KEY = (
    "from torch.utils.data import DataLoader\n"
    "loaders = {{'a': DataLoader(ds, shuffle=True{pin_a}), 'b': DataLoader(vs, shuffle=True{pin_b})}}\n"
    "for epoch in range(3):\n"
    "    for x in loaders['a']:\n"
    "        model({move}).backward()\n"
    "        opt.step()\n"
    "    for x in loaders['b']:\n"
    "        model({move})\n"
)
# MNIST-style functions that the epoch loop hands the loaders to.
HANDED = (
    "from torch.utils.data import DataLoader\n"
    "def train(model, device, loader, optimizer):\n"
    "    for x, y in loader:\n"
    "        x, y = x.to(device), y.to(device)\n"
    "        loss = model(x, y)\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
    "def check(model, device, loader):\n"
    "    for x, y in loader:\n"
    "        score(model(x.to(device)), y.to(device))\n"
    "def main(model, device, optimizer):\n"
    "    loader_a = DataLoader(ds, num_workers=2{pin})\n"
    "    loader_b = DataLoader(ds2, num_workers=2)\n"
    "    for epoch in range(3):\n"
    "        train(model, device, loader_a, optimizer)\n"
    "        check(model, device, loader_b)\n"
)

# PyTorch's MNIST example: the loader's settings in a dict, some only on CUDA.
MNIST = (
    "from torch.utils.data import DataLoader\ndef train(model, device, loader, opt):\n"
    "    for data, target in loader:\n        data = {x}\n        loss = model(data, target)\n"
    "        loss.backward()\n        opt.step()\ndef main(use_cuda):\n    train_kwargs = {{'batch_size': 64}}\n"
    "    if use_cuda:\n        train_kwargs.update({{'num_workers': 1, 'pin_memory': True, 'shuffle': True}})\n"
    "    loader = DataLoader(ds, **train_kwargs)\n    for epoch in range(3):\n        train(model, device, loader, opt)\n"
)


# A corpus read from a file and tokenized by a comprehension into a list (the tester's script): real
# samples, not the plain constants (`range(n)`, `[1, 2, 3]`) the loader rules leave alone.
TOKENIZED = (
    "import torch\nfrom torch.utils.data import DataLoader\n"
    "texts = open('corpus.txt').read().splitlines()\n"
    "train_data = [[ord(c) % 99 + 1 for c in t] for t in texts]\n"
    "loader = DataLoader(train_data, batch_size=8, shuffle=True, collate_fn=pad_collate)\n"
    "for epoch in range(2):\n    for ids in loader:\n        loss = model(ids.to('cuda'))\n"
    "        loss.backward()\n        opt.step()\n"
)
