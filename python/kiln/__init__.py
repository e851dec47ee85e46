# SPDX-License-Identifier: MIT
"""kiln for Python: a GPU compute runtime over Vulkan, with numpy arrays.

Design: cffi in ABI mode (`ffi.dlopen`) over the shared library
libkiln.so.0.4 (its soname), so the package needs no compiler, only Debian's python3-cffi
and python3-numpy (run it with /usr/bin/python3, the interpreter those
packages serve). The declarations come from _cdef.py, generated from
include/kiln.h by gen_cdef.py and checked against it by a test.

The library is looked for in this order: $KILN_LIBRARY (a path), this
package's own folder, then the dynamic loader's usual search
(LD_LIBRARY_PATH, ldconfig's paths); the error names every place tried.

Each object holds its context; a call that fails raises kiln.Error with
the kiln_result's name (`.code`, such as "KILN_ERR_COMPILE") and
kiln_last_error()'s message. Handles are plain ids: a destroyed object's
calls raise Error("KILN_ERR_HANDLE"), never crash. Closing a context frees
every object made from it.
"""
import os

import numpy as np
from cffi import FFI

# SONAME: the library the cdef was made from; another minor version's
# is not taken (docs/abi.md).
from ._cdef import CDEF, SONAME

__all__ = ["Error", "Context", "Buffer", "Image", "Program", "Scheme", "Node",
           "Ticket", "version", "backend_name", "library_path"]

ffi = FFI()
ffi.cdef(CDEF)


def _load():
    tried = []
    env = os.environ.get("KILN_LIBRARY")
    candidates = []
    if env:
        candidates.append(("$KILN_LIBRARY", env))
    candidates.append(("the package folder", os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)))
    candidates.append(("the loader's search", SONAME))
    for where, path in candidates:
        if where == "the package folder" and not os.path.exists(path):
            tried.append("%s (%s: absent)" % (where, path))
            continue
        try:
            return ffi.dlopen(path), path
        except OSError as e:
            tried.append("%s (%s: %s)" % (where, path, e))
    raise ImportError("kiln: cannot load " + SONAME + "; tried " + "; ".join(tried) +
                      ". Build it with cmake -DBUILD_SHARED_LIBS=ON and set KILN_LIBRARY to its path")


lib, library_path = _load()


class Error(Exception):
    """A kiln call failed: .code is the kiln_result's name, .result its
    value, .message kiln_last_error()'s text (for a compile error, with the
    compiler's log appended)."""

    def __init__(self, code, message, result=None):
        super().__init__("%s: %s" % (code, message))
        self.code = code
        self.message = message
        self.result = result


def _check(r, what=""):
    if r != 0:
        msg = ffi.string(lib.kiln_last_error()).decode("utf-8", "replace")
        name = ffi.string(lib.kiln_result_name(r)).decode()
        raise Error(name, msg or what, r)


def version():
    """The linked library's version, "MAJOR.MINOR.PATCH"."""
    return ffi.string(lib.kiln_version()).decode()


def backend_name(kind):
    """A backend's name for its kiln_backend_kind value ("vulkan", "mock";
    "default" for 0, "unknown" for a value kiln is not built with)."""
    return ffi.string(lib.kiln_backend_name(int(kind))).decode()


def _words(values):
    """Param words from ints (their low 32 bits) and floats (their IEEE bits)."""
    out = []
    for v in values:
        if isinstance(v, (float, np.floating)):
            out.append(int(np.array(v, dtype=np.float32).view(np.uint32)))
        else:
            out.append(int(v) & 0xFFFFFFFF)
    return out


def _word(v):
    return _words([v])[0]


class _Object:
    _destroy = None

    def __init__(self, ctx, handle):
        self.ctx = ctx
        self.handle = handle

    def destroy(self):
        """Destroys the object (KILN_ERR_HANDLE if it already is)."""
        _check(getattr(lib, self._destroy)(self.ctx._h, self.handle))


class Buffer(_Object):
    _destroy = "kiln_buffer_destroy"

    def __init__(self, ctx, handle, nbytes):
        super().__init__(ctx, handle)
        self.nbytes = nbytes

    def write(self, array, offset=0):
        """Copies a numpy array's bytes (any dtype; made contiguous) into
        the buffer at byte offset."""
        a = np.ascontiguousarray(array)
        _check(lib.kiln_buffer_upload(self.ctx._h, self.handle, offset, ffi.from_buffer(a), a.nbytes))

    def read(self, dtype=np.uint8, shape=None, offset=0):
        """Reads the buffer (after every earlier submit) as a new numpy
        array of dtype and shape (default: as many elements as fit)."""
        dtype = np.dtype(dtype)
        if shape is None:
            shape = ((self.nbytes - offset) // dtype.itemsize,)
        elif isinstance(shape, int):
            shape = (shape,)
        out = np.empty(shape, dtype=dtype)
        _check(lib.kiln_buffer_readback(self.ctx._h, self.handle, offset, ffi.from_buffer(out), out.nbytes))
        return out


class Image(_Object):
    _destroy = "kiln_image_destroy"

    def __init__(self, ctx, handle, shape, format):
        super().__init__(ctx, handle)
        self.shape = shape
        self.format = format

    def write(self, array):
        a = np.ascontiguousarray(array)
        _check(lib.kiln_image_upload(self.ctx._h, self.handle, ffi.from_buffer(a), a.nbytes))

    def read(self, dtype=np.uint8):
        """Every texel, as an array of shape (depth,) height, width, bytes/itemsize."""
        dtype = np.dtype(dtype)
        size = lib.kiln_format_size(self.format)
        out = np.empty(self.shape + (size // dtype.itemsize,), dtype=dtype)
        _check(lib.kiln_image_readback(self.ctx._h, self.handle, ffi.from_buffer(out), out.nbytes))
        return out


_KIND = {1: "storage_buffer", 2: "uniform_buffer", 3: "storage_texel_buffer", 4: "uniform_texel_buffer",
         5: "storage_image", 6: "sampled_image", 7: "sampler", 8: "combined_image_sampler"}


class Program(_Object):
    _destroy = "kiln_program_destroy"

    def __init__(self, ctx, handle, name):
        super().__init__(ctx, handle)
        self.name = name

    def log(self):
        n = ffi.new("size_t *")
        buf = ffi.new("char[]", 65536)
        _check(lib.kiln_program_log(self.ctx._h, self.handle, buf, 65536, n))
        return ffi.string(buf).decode("utf-8", "replace")

    def wait(self):
        """Waits for the compile; a compile error raises Error
        (KILN_ERR_COMPILE) whose message holds the compiler's log."""
        r = lib.kiln_program_wait(self.ctx._h, self.handle)
        if r != 0:
            msg = ffi.string(lib.kiln_last_error()).decode("utf-8", "replace")
            name = ffi.string(lib.kiln_result_name(r)).decode()
            if name == "KILN_ERR_COMPILE":
                try:
                    log = self.log()
                except Error:
                    log = ""
                if log and log not in msg:
                    msg = msg + "\n" + log
            raise Error(name, msg, r)
        return self

    @property
    def state(self):
        s = ffi.new("kiln_program_state *")
        _check(lib.kiln_program_status(self.ctx._h, self.handle, s))
        return {0: "pending", 1: "ready", 2: "failed"}[s[0]]

    @property
    def interface(self):
        """The program's interface as plain Python data (dicts, lists, ints, str)."""
        i = ffi.new("kiln_program_interface *")
        _check(lib.kiln_program_interface_get(self.ctx._h, self.handle, i))
        s = lambda c: ffi.string(c).decode("utf-8", "replace")
        bindings = []
        for b in i.bindings[0:i.binding_count]:
            fmt = lib.kiln_format_name(b.format) if b.format else ffi.NULL
            bindings.append({
                "set": b.set, "binding": b.binding, "kind": _KIND.get(b.kind, b.kind),
                "read": bool(b.access & 1), "write": bool(b.access & 2), "min_size": b.min_size,
                "name": s(b.name), "count": b.count,
                "format": ffi.string(fmt).decode() if fmt != ffi.NULL else None,
                "image_dims": b.image_dims})
        constants = [{"id": c.id, "type": c.type, "default": c.default_value, "value": c.value,
                      "set": bool(c.set), "used": bool(c.used), "workgroup_axis": c.workgroup_axis,
                      "name": s(c.name)} for c in i.constants[0:i.constant_count]]
        return {"bindings": bindings, "push_constant_size": i.push_constant_size,
                "workgroup_size": tuple(i.workgroup_size), "spirv_words": i.spirv_words,
                "entry": s(i.entry), "params_read": [n for n in range(64) if i.params_read >> n & 1],
                "lens_read": [b for b in range(32) if i.lens_read >> b & 1], "groups_read": bool(i.groups_read),
                "own_push_block": bool(i.own_push_block), "param_words": i.param_words,
                "subgroup_ops": i.subgroup_ops, "constants": constants}


class Ticket:
    def __init__(self, ctx, value):
        self.ctx = ctx
        self.value = value

    def wait(self, timeout=None):
        """Waits for the submit; timeout in seconds (None: as long as the
        device lives). Error KILN_ERR_TIMEOUT when it runs out."""
        ns = 0xFFFFFFFFFFFFFFFF if timeout is None else int(timeout * 1e9)
        t = ffi.new("kiln_ticket *", {"value": self.value})
        _check(lib.kiln_ticket_wait(self.ctx._h, t[0], ns))


class Node:
    def __init__(self, ctx, handle):
        self.ctx = ctx
        self.handle = handle

    def set_param(self, slot, value):
        """Sets param word slot (an int, or a float stored as its bits)."""
        _check(lib.kiln_node_set_param(self.ctx._h, self.handle, slot, _word(value)))

    def set_program(self, program):
        _check(lib.kiln_node_set_program(self.ctx._h, self.handle, program.handle))

    @property
    def params(self):
        out = ffi.new("uint32_t[64]")
        n = ffi.new("uint32_t *")
        _check(lib.kiln_node_get_params(self.ctx._h, self.handle, out, 64, n))
        return list(out[0:min(n[0], 64)])

    def remove(self):
        _check(lib.kiln_node_remove(self.ctx._h, self.handle))


class Scheme(_Object):
    _destroy = "kiln_scheme_destroy"

    def add_node(self, program, bindings=(), groups=(1, 1, 1), params=(), label=None):
        """Appends a node. bindings: {binding: Buffer|Image} or a list whose
        index is the binding; a (set, binding) key or a dict of kiln_binding
        fields ({"buffer": b, "offset": 0, "size": 0, "element": 0}) also
        work. groups: an int or up to 3 ints. params: ints or floats."""
        if isinstance(bindings, dict):
            items = list(bindings.items())
        else:
            items = list(enumerate(bindings))
        arr = ffi.new("kiln_binding[]", max(len(items), 1))
        keep = []
        for i, (key, val) in enumerate(items):
            b = arr[i]
            if isinstance(key, tuple):
                b.set, b.binding = key
            else:
                b.binding = key
            if isinstance(val, dict):
                spec = dict(val)
                obj = spec.pop("buffer", None) or spec.pop("image", None)
                for k, v in spec.items():
                    setattr(b, k, v)
                val = obj
            if isinstance(val, Buffer):
                b.buffer.id = val.handle.id
            elif isinstance(val, Image):
                b.image.id = val.handle.id
            elif val is not None:
                raise TypeError("binding %r: a kiln Buffer or Image, not %r" % (key, type(val).__name__))
        if isinstance(groups, int):
            groups = (groups,)
        words = _words(params)
        pw = ffi.new("uint32_t[]", words) if words else ffi.NULL
        lab = ffi.new("char[]", label.encode()) if label else ffi.NULL
        keep.append(lab)
        desc = ffi.new("kiln_node_desc *")
        desc.program = program.handle
        desc.bindings = arr
        desc.binding_count = len(items)
        for k, g in enumerate(tuple(groups)[:3]):
            desc.groups[k] = g
        desc.params = pw
        desc.param_count = len(words)
        desc.label = lab
        out = ffi.new("kiln_node *")
        _check(lib.kiln_scheme_add_node(self.ctx._h, self.handle, desc, out))
        return Node(self.ctx, out[0])

    def submit(self):
        """Records the scheme if it changed, else replays it; submits it.
        Returns a Ticket."""
        t = ffi.new("kiln_ticket *")
        _check(lib.kiln_scheme_submit(self.ctx._h, self.handle, t))
        return Ticket(self.ctx, t[0].value)

    @property
    def stats(self):
        s = ffi.new("kiln_scheme_stats *")
        _check(lib.kiln_scheme_stats_get(self.ctx._h, self.handle, s))
        return {f: getattr(s, f) for f in dir(s)}


class Context:
    """A kiln context on one device. Keyword arguments are kiln_context_desc
    fields (device="llvmpipe", validation=1, compile_threads=2, ...).
    Use it as a context manager, or call close()."""

    def __init__(self, **desc):
        d = ffi.new("kiln_context_desc *")
        self._keep = []
        for k, v in desc.items():
            if isinstance(v, str):
                v = ffi.new("char[]", v.encode())
                self._keep.append(v)
            setattr(d, k, v)
        h = ffi.new("kiln_context *")
        _check(lib.kiln_context_create(d, h))
        self._h = h[0]
        self._open = True

    def close(self):
        """Destroys the context and every object made from it."""
        if getattr(self, "_open", False):
            self._open = False
            _check(lib.kiln_context_destroy(self._h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def buffer(self, array=None, nbytes=None, uniform=False, label=None):
        """A buffer holding a numpy array's bytes, or nbytes zeroed bytes."""
        a = None
        if array is not None:
            a = np.ascontiguousarray(array)
            nbytes = a.nbytes
        if not nbytes:
            raise ValueError("kiln: buffer needs an array or nbytes > 0")
        d = ffi.new("kiln_buffer_desc *")
        d.size = nbytes
        d.usage = 2 if uniform else 0
        lab = ffi.new("char[]", label.encode()) if label else ffi.NULL
        d.label = lab
        h = ffi.new("kiln_buffer *")
        _check(lib.kiln_buffer_create(self._h, d, h))
        b = Buffer(self, h[0], nbytes)
        if a is not None:
            b.write(a)
        return b

    def image(self, width, height, format="rgba8", depth=0, data=None, label=None):
        """An image of width x height (x depth) texels of a format named as
        GLSL names it ("rgba8", "r32f"); data: a numpy array of its texels."""
        fmt = None
        for v in range(1, 256):
            n = lib.kiln_format_name(v)
            if n != ffi.NULL and ffi.string(n).decode() == format:
                fmt = v
                break
        if fmt is None:
            raise ValueError("kiln: no format %r" % format)
        d = ffi.new("kiln_image_desc *")
        d.width, d.height, d.depth, d.format = width, height, depth, fmt
        lab = ffi.new("char[]", label.encode()) if label else ffi.NULL
        d.label = lab
        h = ffi.new("kiln_image *")
        _check(lib.kiln_image_create(self._h, d, h))
        shape = (depth, height, width) if depth > 1 else (height, width)
        img = Image(self, h[0], shape, fmt)
        if data is not None:
            img.write(data)
        return img

    _LANGUAGES = {None: 0, "glsl": 1, "hlsl": 2, "spirv": 3}

    def program(self, source, name=None, entry=None, defines=None, constants=None, wait=True, language=None,
                preamble=None, workgroup_size=None):
        """Compiles a compute program: GLSL source (with kiln's param
        prelude), HLSL source (language="hlsl", entry its kernel's name),
        or a SPIR-V module given as bytes. defines: {name: value or None};
        constants: {constant_id: int or float}; defines may be
        function-like ({"psc(x)": "(x)"}). preamble: text a host puts
        after #version and #extension lines (HLSL: first).
        workgroup_size: (x[, y[, z]]) over the program's own. wait=False
        returns at once (call .wait())."""
        if language not in self._LANGUAGES:
            raise ValueError("language %r: expected 'glsl', 'hlsl' or 'spirv'" % (language,))
        keep = []

        def cs(s):
            c = ffi.new("char[]", s.encode())
            keep.append(c)
            return c
        d = ffi.new("kiln_program_desc *")
        d.language = self._LANGUAGES[language]
        if preamble is not None:
            d.preamble = cs(preamble)
        if workgroup_size is not None:
            size = tuple(workgroup_size) if hasattr(workgroup_size, "__iter__") else (workgroup_size,)
            if not 1 <= len(size) <= 3:
                raise ValueError("workgroup_size: 1 to 3 axes, got %r" % (workgroup_size,))
            for i, v in enumerate(size):
                d.workgroup_size[i] = v
        if isinstance(source, (bytes, bytearray, memoryview)):
            raw = bytes(source)
            if len(raw) % 4:
                raise ValueError("a SPIR-V module is whole 32-bit words: %d bytes given" % len(raw))
            words = ffi.new("uint32_t[]", max(1, len(raw) // 4))
            ffi.memmove(words, raw, len(raw))
            keep.append(words)
            d.spirv, d.spirv_words = words, len(raw) // 4
        else:
            d.source = cs(source)
        if name:
            d.name = cs(name)
        if entry:
            d.entry = cs(entry)
        if defines:
            arr = ffi.new("kiln_define[]", len(defines))
            keep.append(arr)
            for i, (k, v) in enumerate(defines.items()):
                arr[i].name = cs(k)
                arr[i].value = cs(str(v)) if v is not None else ffi.NULL
            d.defines, d.define_count = arr, len(defines)
        if constants:
            arr = ffi.new("kiln_spec_constant[]", len(constants))
            keep.append(arr)
            for i, (k, v) in enumerate(constants.items()):
                arr[i].id, arr[i].word = k, _word(v)
            d.constants, d.constant_count = arr, len(constants)
        h = ffi.new("kiln_program *")
        _check(lib.kiln_program_create(self._h, d, h))
        p = Program(self, h[0], name or ("program.spv" if d.spirv else "program.comp"))
        if wait:
            p.wait()
        return p

    def scheme(self, label=None):
        d = ffi.new("kiln_scheme_desc *")
        lab = ffi.new("char[]", label.encode()) if label else ffi.NULL
        d.label = lab
        h = ffi.new("kiln_scheme *")
        _check(lib.kiln_scheme_create(self._h, d, h))
        return Scheme(self, h[0])

    def wait_idle(self):
        _check(lib.kiln_context_wait_idle(self._h))

    @property
    def stats(self):
        s = ffi.new("kiln_context_stats *")
        _check(lib.kiln_context_stats_get(self._h, s))
        return {f: getattr(s, f) for f in dir(s)}

    @property
    def caps(self):
        c = ffi.new("kiln_caps *")
        _check(lib.kiln_context_caps(self._h, c))
        return {"device_name": ffi.string(c.device_name).decode(), "driver_name": ffi.string(c.driver_name).decode(),
                "subgroup_size": c.subgroup_size, "validation": bool(c.validation)}
