"""Class rules: what classes of model_new.py may derive from and define (forbidden_base_class,
lazy_output, module_override, and the dynamic_code hooks), and what each `self.X` holds (the kinds the
compute analysis starts from)."""

from __future__ import annotations

import ast

from .family import CheckerState
from .syntax import (
    function_params,
    is_cuda_device_literal,
    is_extension_path,
    names_bound_in,
    params_with_object_defaults,
    root_name,
    self_attr,
    snippet,
    target_names,
)

FORBIDDEN_DUNDER_METHODS = {"__getattr__", "__getattribute__", "__setattr__", "__delattr__", "__del__",
                            "__call__", "__new__", "__init_subclass__", "__class_getitem__", "__set_name__",
                            "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__get__",
                            "__set__", "__delete__", "__instancecheck__", "__subclasscheck__"}
LAZY_DUNDER_METHODS = {"__torch_function__", "__torch_dispatch__"}
# torch.autograd.Function: `Fn.apply(x)` runs the class's forward (checked like ModelNew.forward, from the
# call with the call's taint); backward never runs in the judge's forward (it runs under torch.no_grad, and
# nothing outside __init__ may call backward or torch.autograd).
AUTOGRAD_FUNCTION_BASES = {"torch.autograd.Function", "torch.autograd.function.Function"}

# nn.Module methods a candidate may not override (torch calls them outside forward).
NN_MODULE_METHODS = set("""
_apply _call_impl _wrapped_call_impl _load_from_state_dict _save_to_state_dict _register_state_dict_hook
_register_load_state_dict_pre_hook _named_members _get_name _replicate_for_data_parallel _get_backward_hooks
_maybe_warn_non_full_backward_hook add_module apply bfloat16 buffers children compile cpu cuda double eval
float get_buffer get_extra_state get_parameter get_submodule half ipu load_state_dict modules mtia
named_buffers named_children named_modules named_parameters parameters register_backward_hook
register_buffer register_forward_hook register_forward_pre_hook register_full_backward_hook
register_full_backward_pre_hook register_load_state_dict_post_hook register_load_state_dict_pre_hook
register_module register_parameter register_state_dict_post_hook register_state_dict_pre_hook requires_grad_
set_extra_state set_submodule share_memory state_dict to to_empty train type xpu zero_grad
""".split())


class ClassRules(CheckerState):
    """The class checks of the Checker and its table of self attributes (a mixin: `report`, `dotted`,
    `classes` and `attr_kinds` come from the Checker)."""

    def check_class_shape(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            path = self.dotted(base)
            if isinstance(base, ast.Name) and base.id in self.classes:
                continue
            if isinstance(base, ast.Name) and base.id == "object":
                continue
            if path == "torch.nn.Module":
                continue
            if path in AUTOGRAD_FUNCTION_BASES:
                continue  # an autograd wrapper of the extension: its forward is checked as forward is
            if path and path.startswith("torch.") and path.split(".")[-1] == "Tensor":
                self.report("lazy_output", node, f"class {node.name} subclasses torch.Tensor")
                continue
            shown = path or snippet(base)
            self.report("forbidden_base_class", node,
                        f"class {node.name} derives from {shown}; derive from nn.Module (or "
                        "torch.autograd.Function for an autograd wrapper of your kernels)")
        for keyword in node.keywords:
            self.report("dynamic_code", node, f"class keyword `{keyword.arg}` (metaclass) is not allowed")
        derives_module = self.derives_from_module(node)
        for item in node.body:
            if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if item.name in LAZY_DUNDER_METHODS:
                self.report("lazy_output", item, f"defining {item.name} makes lazy outputs")
            elif item.name in FORBIDDEN_DUNDER_METHODS:
                self.report("dynamic_code", item, f"defining {item.name} is not allowed")
            elif derives_module and item.name in NN_MODULE_METHODS:
                self.report("module_override", item,
                            f"overriding nn.Module.{item.name} runs code outside forward")

    def is_autograd_function(self, node: ast.ClassDef, seen: frozenset[str] = frozenset()) -> bool:
        """The class derives from torch.autograd.Function (directly or through classes of this file)."""
        for base in node.bases:
            if self.dotted(base) in AUTOGRAD_FUNCTION_BASES:
                return True
            if isinstance(base, ast.Name) and base.id in self.classes and base.id not in seen:
                if self.is_autograd_function(self.classes[base.id], seen | {node.name}):
                    return True
        return False

    def derives_from_module(self, node: ast.ClassDef, seen: frozenset[str] = frozenset()) -> bool:
        for base in node.bases:
            if self.dotted(base) == "torch.nn.Module":
                return True
            if isinstance(base, ast.Name) and base.id in self.classes and base.id not in seen:
                if self.derives_from_module(self.classes[base.id], seen | {node.name}):
                    return True
        return False

    # -- self attributes ---------------------------------------------------------------------------

    def classify_classes(self) -> None:
        for name, cls in self.classes.items():
            kinds: dict[str, str] = {}
            # Names the class body binds are class attributes, not the module's aliases.
            shadowing = names_bound_in(item for item in cls.body
                                       if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)))
            shadowing |= {item.name for item in cls.body if isinstance(item, (ast.FunctionDef,
                                                                              ast.AsyncFunctionDef))}
            for item in cls.body:
                if isinstance(item, (ast.Assign, ast.AnnAssign)) and item.value is not None:
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    for target in targets:
                        for attr in target_names(target):
                            self.merge_kind(kinds, attr, self.value_kind(item.value, set(), shadowing))
            init = self.method(cls, "__init__")
            if init is not None:
                self.classify_init(init, kinds, cls, set())
            self.attr_kinds[name] = kinds
        # Attributes inherited from local base classes.
        for name, cls in self.classes.items():
            for base in cls.bases:
                if isinstance(base, ast.Name) and base.id in self.attr_kinds:
                    for attr, kind in self.attr_kinds[base.id].items():
                        self.merge_kind(self.attr_kinds[name], attr, kind)

    @staticmethod
    def merge_kind(kinds: dict[str, str], attr: str, kind: str) -> None:
        """An attribute assigned several kinds of values takes the most dangerous one: a device or an
        extension assigned anything else is no longer trusted as such."""
        order = ["device", "scalar", "extension", "container", "unknown", "tensor", "module", "local"]
        old = kinds.get(attr)
        if old is None or order.index(kind.split(":")[0]) > order.index(old.split(":")[0]):
            kinds[attr] = kind

    def classify_init(self, func: ast.FunctionDef, kinds: dict[str, str], cls: ast.ClassDef,
                      seen: set[str]) -> None:
        """Reads `self.X = value` (and register_buffer/register_parameter) in __init__ and the helpers it
        calls through self."""
        seen.add(func.name)
        scalar_locals = {a.arg for a in function_params(func.args)} - {"self"} - \
            params_with_object_defaults(func.args)
        # Names bound inside the method shadow the module's aliases (`ext = torch.relu; self.f = ext`).
        shadowing = scalar_locals | names_bound_in(func.body)
        for node in ast.walk(func):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    attr = self_attr(target)
                    if attr:
                        self.merge_kind(kinds, attr, self.value_kind(node.value, scalar_locals, shadowing))
                    elif isinstance(target, (ast.Tuple, ast.List)):
                        for element in target.elts:
                            if element_attr := self_attr(element):
                                self.merge_kind(kinds, element_attr, "unknown")
            elif isinstance(node, ast.Call):
                called = self_attr(node.func)
                if called in {"register_buffer", "register_parameter"} and node.args and \
                        isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    self.merge_kind(kinds, node.args[0].value, "tensor")
                elif called == "add_module" and node.args and isinstance(node.args[0], ast.Constant):
                    self.merge_kind(kinds, str(node.args[0].value), "module")
                elif called and called not in seen:
                    helper = self.method(cls, called)
                    if helper is not None:
                        self.classify_init(helper, kinds, cls, seen)

    def value_kind(self, value: ast.expr, scalar_names: set[str],
                   shadowing: set[str] | frozenset[str] = frozenset()) -> str:
        """What `self.X = value` in __init__ stores: scalar, container, tensor, module (a torch.nn
        layer), local:<Class> (an instance of a class of this file), extension (cuda_extension or one
        of its functions, also through a module-level alias: calls through it are custom op calls),
        device (torch.device("cuda")) or unknown. `shadowing`: names the method binds
        itself, which are not the module's aliases."""
        if isinstance(value, ast.Constant):
            return "scalar"
        if isinstance(value, (ast.Name, ast.Attribute)) and root_name(value) not in shadowing:
            if is_extension_path(self.dotted(value)):
                return "extension"
        if isinstance(value, ast.Name):
            return "scalar" if value.id in scalar_names else "unknown"
        if isinstance(value, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp)):
            parts = [n for n in ast.walk(value) if isinstance(n, (ast.Call, ast.Attribute, ast.Subscript))]
            names = [n for n in ast.walk(value) if isinstance(n, ast.Name)]
            if not parts and all(n.id in scalar_names for n in names):
                return "scalar"
            return "unknown"
        if isinstance(value, ast.Tuple) and all(isinstance(e, ast.Constant) or
                                                (isinstance(e, ast.Name) and e.id in scalar_names)
                                                for e in value.elts):
            return "scalar"
        if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
            return "container"
        if isinstance(value, ast.Call):
            func = value.func
            if isinstance(func, ast.Name) and func.id in self.classes:
                return f"local:{func.id}"
            if isinstance(func, ast.Name) and func.id in {"int", "float", "bool", "str", "tuple", "round",
                                                          "abs", "min", "max", "len"}:
                return "scalar"
            if isinstance(func, ast.Name) and func.id in {"list", "dict", "set"}:
                return "container"
            path = self.dotted(func)
            if path:
                if path.startswith("math."):
                    return "scalar"
                if path == "torch.device" and is_cuda_device_literal(value):
                    return "device"
                if path.startswith("torch.nn.") and path.split(".")[-1][:1].isupper() and \
                        path != "torch.nn.Parameter" and path != "torch.nn.parameter.Parameter":
                    return "module"
                if path.startswith("torch"):
                    return "tensor"
        return "unknown"

    @staticmethod
    def method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
        for item in cls.body:
            if isinstance(item, ast.FunctionDef) and item.name == name:
                return item
        return None

    def find_method(self, cls: ast.ClassDef, name: str, seen: frozenset[str] = frozenset()) -> \
            tuple[ast.ClassDef, ast.FunctionDef] | None:
        found = self.method(cls, name)
        if found is not None:
            return cls, found
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.classes and base.id not in seen:
                hit = self.find_method(self.classes[base.id], name, seen | {cls.name})
                if hit:
                    return hit
        return None
