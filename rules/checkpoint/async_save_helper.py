"""The code TL501's fix adds to a module, once: a background checkpoint writer and the wait for it."""

from __future__ import annotations


HELPER = "_trainlint_async_save"
WAIT = "_trainlint_wait_for_save"
# The one copy of the code the fix adds to a module. It snapshots every tensor to the CPU before
# returning, so the file holds the state of the step that asked for it (never a torn mix of two
# steps), and writes in a non-daemon thread, which the interpreter waits for before exiting. No
# later save re-raises the last one's error, so an exit handler does: an exception raised in one is
# only printed (the exit status stays 0), hence os._exit(1), after the script's own exit handlers
# have run and the output is flushed, as they would have been had the blocking save raised. The
# fix calls the second function after the training loop: what runs after the loop (a final save
# to the same file, a load, an archive of the folder, `os._exit`) finds the last file complete.
HELPER_CODE = '''

def _trainlint_async_save(save, /, *args, **kwargs):
    """Added by trainlint (TL501): `save(*args, **kwargs)` from a CPU snapshot, in the
    background.

    Waits for the previous save first (_trainlint_wait_for_save) and re-raises its
    error; the error of a last one not waited for makes the process exit with status 1.
    Live modules and optimizers cannot be snapshotted cheaply, nor can a file object be
    written later: those are saved here, blocking, as before.
    """
    import atexit
    import copy
    import os
    import sys
    import threading

    import torch

    copies = {}  # a storage's CPU copy, by where its memory is: tied weights stay tied
    seen = {}  # an object's copy, by id: one object saved twice loads as one, as torch.save keeps it
    locations = {}  # a copy's memory address: the device tag of the storage it copies

    def snapshot(obj):
        if id(obj) not in seen:
            seen[id(obj)] = copy_of(obj)
        return seen[id(obj)]

    def tensor_copy(obj):
        if (type(obj) not in (torch.Tensor, torch.nn.Parameter) or obj.layout != torch.strided
                or obj.is_quantized or obj.is_conj() or obj.is_neg()):
            view = obj.detach().to("cpu", copy=True)
        else:
            # Each storage is copied once, as torch.save writes it once, and the tensor is the
            # same view of the copy: tensors that shared memory still do.
            storage = obj.untyped_storage()
            key = (obj.device, storage.data_ptr())
            if key not in copies:
                copies[key] = storage.clone() if obj.device.type == "cpu" else storage.cpu()
                if obj.device.type != "cpu" and copies[key].data_ptr():
                    locations[copies[key].data_ptr()] = torch.serialization.location_tag(storage)
            view = torch.empty(0, dtype=obj.dtype)
            view.set_(copies[key], obj.storage_offset(), obj.size(), obj.stride())
        if type(obj) is torch.nn.Parameter:  # loads as a Parameter, as saved
            return torch.nn.Parameter(view, requires_grad=obj.requires_grad)
        return view.requires_grad_(obj.requires_grad)

    def copy_of(obj):
        if isinstance(obj, torch.Tensor):
            return tensor_copy(obj)
        if isinstance(obj, (torch.nn.Module, torch.optim.Optimizer)):
            raise TypeError("a live object is pickled as it is when written")
        if isinstance(obj, dict):
            out = copy.copy(obj)
            for key, value in obj.items():
                out[key] = snapshot(value)
            return out
        if isinstance(obj, (list, tuple)):
            items = [snapshot(value) for value in obj]
            return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
        if obj is None or isinstance(obj, (str, bytes, int, float, bool)):
            return obj
        if hasattr(obj, "write") or hasattr(obj, "read"):
            raise TypeError("a file object is written by the caller, not a copy")
        return copy.deepcopy(obj)

    def write():
        try:
            save(*args, **kwargs)
        except BaseException as exc:  # printed by the thread, raised by the next save
            _trainlint_async_save.error = exc
            raise
        finally:
            state.locations = {}

    def device_tag(storage):
        # torch.save tags each storage with its device, and torch.load puts it back there: a
        # copy is tagged as the GPU storage it copies, so the file loads as a blocking save's.
        return state.locations.get(storage.data_ptr()) if storage.device.type == "cpu" else None

    def fail_on_last_error():  # at exit, once the interpreter has waited for the last write
        if state.error is not None:
            atexit.unregister(fail_on_last_error)
            atexit._run_exitfuncs()  # the script's own exit handlers, which os._exit would skip
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)

    state = _trainlint_async_save
    if not hasattr(state, "error"):  # the first save
        state.error = None
        state.locations = {}
        atexit.register(fail_on_last_error)
        # A priority of its own, ahead of the CPU's (10): two packages of one priority are
        # compared by their functions, which raises, and each copy of this helper registers one.
        torch.serialization.register_package(-id(state), device_tag, lambda storage, location: None)
    _trainlint_wait_for_save()
    try:
        args, kwargs = snapshot((args, kwargs))
    except Exception:
        return save(*args, **kwargs)
    state.locations = locations
    state.thread = threading.Thread(target=write, name="trainlint-async-save")
    state.thread.start()


def _trainlint_wait_for_save():
    """Added by trainlint (TL501): wait for the save `_trainlint_async_save` writes in the
    background, and re-raise its error. Called after the training loop, so that what
    follows it finds the checkpoint complete."""
    state = _trainlint_async_save
    if getattr(state, "thread", None) is not None:
        state.thread.join()
        state.thread = None
    error = getattr(state, "error", None)
    if error is not None:
        state.error = None
        raise error
'''
