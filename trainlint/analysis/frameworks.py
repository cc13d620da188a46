"""Training frameworks' configuration classes, recognised by the qualified name a call resolves to
(`Names.qualified`): transformers' `TrainingArguments` and the subclasses trl and
sentence-transformers ship, Lightning's `Trainer`/`Fabric`, accelerate's `Accelerator`. A
framework configured this way builds the DataLoader and runs the step itself, so its settings
are what the loader and precision rules read (`dataloader_num_workers=`, `fp16=`, `precision=`).
"""

from __future__ import annotations

import libcst as cst

from trainlint.analysis.literals import literal

_LIGHTNING = ("lightning", "pytorch_lightning", "lightning_fabric")

# trl's classes named like its configs that are not TrainingArguments (model, dataset and merge
# settings); every other `*Config` of trl derives from TrainingArguments.
_TRL_NOT_ARGUMENTS = frozenset({"ModelConfig", "DatasetConfig", "DatasetMixtureConfig", "MergeConfig"})


def _split(qualified: str | None) -> tuple[str, str]:
    if not qualified or "." not in qualified:
        return "", ""
    return qualified.split(".", 1)[0], qualified.rsplit(".", 1)[-1]


def is_training_arguments(qualified: str | None) -> bool:
    """transformers' TrainingArguments or a subclass from transformers, sentence-transformers or
    trl (`Seq2SeqTrainingArguments`, `SentenceTransformerTrainingArguments`, `SFTConfig`)."""
    package, cls = _split(qualified)
    if package in ("transformers", "sentence_transformers"):
        return cls.endswith("TrainingArguments")
    if package == "trl":
        return cls.endswith(("Config", "TrainingArguments")) and cls not in _TRL_NOT_ARGUMENTS
    return False


def is_lightning_trainer(qualified: str | None) -> bool:
    """Lightning's Trainer or Fabric (`lightning`, `pytorch_lightning`, `lightning_fabric`)."""
    package, cls = _split(qualified)
    return package in _LIGHTNING and cls in ("Trainer", "Fabric")


def is_lightning_fit_trainer(qualified: str | None) -> bool:
    """Lightning's Trainer (not Fabric): `trainer.fit(...)` runs the epochs and reads the loaders."""
    package, cls = _split(qualified)
    return package in _LIGHTNING and cls == "Trainer"


def is_lightning_data_source(qualified: str | None) -> bool:
    """A LightningModule or LightningDataModule, whose `train_dataloader()` the Trainer calls once
    for its training loader and iterates every epoch."""
    package, cls = _split(qualified)
    return package in _LIGHTNING and cls in ("LightningModule", "LightningDataModule")


def is_accelerator(qualified: str | None) -> bool:
    package, cls = _split(qualified)
    return package == "accelerate" and cls == "Accelerator"


# Where each Lightning package keeps the strategy classes its Trainer or Fabric takes.
_STRATEGIES = {
    ("lightning", "Trainer"): "lightning.pytorch.strategies",
    ("pytorch_lightning", "Trainer"): "pytorch_lightning.strategies",
    ("lightning", "Fabric"): "lightning.fabric.strategies",
    ("lightning_fabric", "Fabric"): "lightning_fabric.strategies",
}


def lightning_strategies(qualified: str | None) -> str | None:
    """The module holding the strategies (`DDPStrategy`) for a Lightning Trainer or Fabric."""
    return _STRATEGIES.get(_split(qualified))


def is_accelerate_ddp_kwargs(qualified: str | None) -> bool:
    """accelerate's `DistributedDataParallelKwargs`, the DistributedDataParallel options an
    `Accelerator(kwargs_handlers=[...])` wraps the model with."""
    package, cls = _split(qualified)
    return package == "accelerate" and cls == "DistributedDataParallelKwargs"


def is_lightning_ddp_strategy(qualified: str | None) -> bool:
    """Lightning's `DDPStrategy`, which hands extra keywords to DistributedDataParallel."""
    package, cls = _split(qualified)
    return package in _LIGHTNING and cls == "DDPStrategy"


# The literal settings that put a framework's training on the CPU, where batches are not copied to
# an accelerator and float16 autocast is not run (Lightning falls back to bfloat16 there):
# Lightning's Trainer/Fabric, TrainingArguments (`no_cuda` before transformers 5), Accelerator.
_ON_CPU = {"accelerator": "cpu", "use_cpu": True, "no_cuda": True, "cpu": True}


def configured_for_cpu(call: cst.Call) -> bool:
    """The framework call's own settings train on the CPU (`Trainer(accelerator="cpu")`,
    `TrainingArguments(use_cpu=True)`, `Accelerator(cpu=True)`)."""
    return any(arg.keyword is not None and arg.keyword.value in _ON_CPU
               and literal(arg.value) == _ON_CPU[arg.keyword.value] for arg in call.args)
