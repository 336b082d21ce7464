"""The nn.Module contract: the chaining methods return the module itself and leave its behaviour as it was."""

from __future__ import annotations

import enum
import inspect

import torch
from torch import nn

from .harness import (
    FORWARD_GRAD,
    Context,
    Transform,
    TransformRun,
    build,
    eager,
    run_forward_backward,
    stage,
    tensor_state,
)

#: where this transform stands in the table (and the report's columns)
ORDER = 15


def _chain(ctx: Context, training: bool) -> tuple[tuple[str, object], ...]:
    """(label, call) of every chaining method a user's code relies on, in an order that ends where it started:
    in the mode the module was built in (``training``: the chain's last mode method sets it, nothing else), on the
    cell's device, in the cell's dtype (which parameters are trainable is put back after, as built)."""
    device, dtype = ctx.device, ctx.dtype
    name = str(dtype).removeprefix("torch.")
    to_device = ("cuda()", lambda m: m.cuda()) if device.type == "cuda" else ("cpu()", lambda m: m.cpu())
    to_eval, to_training = ("eval()", lambda m: m.eval()), ("train()", lambda m: m.train())
    modes = (to_eval, ("train(False)", lambda m: m.train(False)), to_training) if training else \
        (to_training, ("train(False)", lambda m: m.train(False)), to_eval)
    return (
        *modes,
        ("requires_grad_(False)", lambda m: m.requires_grad_(False)),
        ("double()", lambda m: m.double()),
        ("float()", lambda m: m.float()),
        (f"to({name})", lambda m: m.to(dtype)),
        (f"to('{device.type}')", lambda m: m.to(device)),
        to_device,
        (f"to('{device.type}', {name})", lambda m: m.to(device, dtype)),
    )


#: what two separately built modules may hold in common: values nothing can change in place
_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes, range, type, frozenset, torch.dtype, torch.device,
              torch.Size, torch.layout, torch.memory_format)


def _mutable(value: object) -> bool:
    """Whether ``value`` is an object that code can change in place and that two instances could share: an instance
    with attributes (not a frozen dataclass), a list, dict or set. Classes, functions, methods and Python modules are
    definitions, not state."""
    if isinstance(value, (list, dict, set, bytearray)):
        return True
    if isinstance(value, _IMMUTABLE) or callable(value) and not hasattr(value, "__dict__") \
            or inspect.isroutine(value) or inspect.ismodule(value) or isinstance(value, enum.Enum):
        return False
    params = getattr(type(value), "__dataclass_params__", None)
    if params is not None and params.frozen:
        return False
    return hasattr(value, "__dict__")


def _attribute_parts(module: nn.Module):
    """("name", value) of the tensors and mutable objects ``module`` holds as plain attributes (not its parameters,
    buffers or submodules), looking into tuples (a NamedTuple of parameters, say) one level deep."""
    for name, value in vars(module).items():
        if name in ("_parameters", "_buffers", "_modules") or isinstance(value, nn.Module):
            continue
        if isinstance(value, tuple):
            for field, item in zip(getattr(value, "_fields", range(len(value))), value):
                if isinstance(item, torch.Tensor) or _mutable(item):
                    yield f"{name}.{field}", item
        elif isinstance(value, torch.Tensor) or _mutable(value):
            yield name, value


def _storage(t: torch.Tensor) -> int | None:
    """The address of ``t``'s memory (None for an empty tensor or one without storage: a wrapper tensor subclass, such
    as quanto's quantized weights, has a storage object whose address raises)."""
    try:
        storage = t.untyped_storage()
        return storage.data_ptr() if storage.nbytes() else None
    except (RuntimeError, NotImplementedError):
        return None


def _tensors(module: nn.Module):
    """("name (Kind)", tensor) of every tensor ``module`` holds (``tensor_state``: parameters, buffers, tensors in its
    attributes, containers and plain objects, and on its classes)."""
    parameters, buffers = {id(t) for t in module.parameters()}, {id(t) for t in module.buffers()}
    for path, t in tensor_state(module).items():
        kind = "Parameter" if id(t) in parameters else "buffer" if id(t) in buffers else "tensor attribute"
        yield f"{path} ({kind})", t


def shared_between(module: nn.Module, other: nn.Module) -> list[tuple[str, str]]:
    """(cause, "name (Type)") of each part of ``module`` that ``other``, built separately, holds too (a default
    argument evaluated once, a class attribute, a cached part): the same submodule instance
    (``module-shared-between-builds``), the same memory under a parameter, buffer or tensor attribute
    (``tensor-shared-between-builds``: an in-place change, ``load_state_dict`` included, reaches both), or the same
    mutable object held as an attribute (``object-shared-between-builds``)."""
    theirs = {id(m) for m in other.modules()}
    found = [("module-shared-between-builds", f"{name or '<the module itself>'} ({type(m).__name__})")
             for name, m in module.named_modules() if id(m) in theirs]
    their_memory = {_storage(t) for _, t in _tensors(other)} - {None}
    found += [("tensor-shared-between-builds", name) for name, t in _tensors(module) if _storage(t) in their_memory]
    their_objects = {id(value) for m in other.modules() for _, value in _attribute_parts(m)
                     if not isinstance(value, torch.Tensor)}
    found += [("object-shared-between-builds", f"{prefix + '.' if prefix else ''}{name} ({type(value).__name__})")
              for prefix, m in module.named_modules() if id(m) not in theirs
              for name, value in _attribute_parts(m)
              if not isinstance(value, torch.Tensor) and id(value) in their_objects]
    return found


def _modes_not_set(label: str, module: nn.Module) -> list[str]:
    """The submodules a mode method (``label``) left in the other mode."""
    training = label == "train()"
    return [f"{label} left {name or '<the module itself>'} ({type(m).__name__}) in "
            f"{'eval' if training else 'training'} mode"
            for name, m in module.named_modules() if m.training != training]


def module_contract(ctx: Context) -> TransformRun:
    """eval(), train(), requires_grad_(), double(), float(), to() and cpu()/cuda() return the module itself (users
    chain them: ``Net().eval().to(device)``), mode methods reach every submodule, and after a round trip ending in
    its built mode it computes what a fresh module computes.

    Two modules built separately share no part (:func:`shared_between`)."""
    module = build(ctx)
    shared = shared_between(module, build(ctx))
    trainable = [(p, p.requires_grad) for p in module.parameters()]
    returned_other, modes_not_set = [], []
    for label, call in _chain(ctx, module.training):
        with stage("module_contract"):
            returned = call(module)
        if returned is not module:
            returned_other.append(f"{label} -> {type(returned).__module__}.{type(returned).__qualname__}")
        if label in ("eval()", "train(False)", "train()"):
            modes_not_set += _modes_not_set(label, module)
    for p, flag in trainable:  # as built: a parameter the library keeps frozen stays frozen
        p.requires_grad_(flag)
    # judged in the mode the chain left it in, as a user's module is (no submodule's mode put back by hand)
    result = run_forward_backward(ctx, module, module, name="module_contract")
    result.against = eager(ctx)
    result.findings.returned_other = returned_other
    result.findings.modes_not_set = modes_not_set
    result.findings.shared_between_builds = shared
    return result


TRANSFORMS = (
    Transform("module_contract", module_contract, FORWARD_GRAD + ("module_contract", "independent_builds"),
              failure_cause="module-method-failed", protocol=True),
)
