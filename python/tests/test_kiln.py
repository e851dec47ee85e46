# SPDX-License-Identifier: MIT
# kiln's Python package as a user sees it: the README's scale checked
# against numpy, a multi-node scheme with param updates, errors (a compile
# error's log, a stale handle, a wrong binding), the interface, the cdef
# in step with kiln.h.
import os
import subprocess
import sys

import numpy as np
import pytest

import kiln

SCALE = """#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { float x[]; };
void main() { x[gl_GlobalInvocationID.x] *= kiln_paramf(0); }
"""

ADD = """#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) buffer B { float b[]; };
void main() { uint i = gl_GlobalInvocationID.x; b[i] = b[i] + a[i] * kiln_paramf(0) + float(kiln_param(1)); }
"""


def test_version():
    assert kiln.version().count(".") == 2


def test_backend_names():
    assert kiln.backend_name(1) == "vulkan"
    assert kiln.backend_name(2) == "mock"
    assert kiln.backend_name(0) == "default"
    assert kiln.backend_name(99) == "unknown"


def test_scale_like_readme(ctx):
    x = np.random.default_rng(1).standard_normal(1024).astype(np.float32)
    prog = ctx.program(SCALE, name="scale.comp")
    buf = ctx.buffer(x)
    scheme = ctx.scheme()
    scheme.add_node(prog, bindings={0: buf}, groups=(1024 // 64,), params=[3.0])
    scheme.submit().wait()
    np.testing.assert_array_equal(buf.read(np.float32, x.shape), x * np.float32(3.0))


def test_multi_node_scheme_param_updates(ctx):
    a = np.arange(256, dtype=np.float32)
    ba = ctx.buffer(a)
    bb = ctx.buffer(nbytes=a.nbytes)
    bc = ctx.buffer(nbytes=a.nbytes)
    add = ctx.program(ADD, name="add.comp")
    scheme = ctx.scheme("two")
    n1 = scheme.add_node(add, bindings=[ba, bb], groups=4, params=[1.0, 0])
    n2 = scheme.add_node(add, bindings={0: bb, 1: bc}, groups=4, params=[2.0, 0])
    expect_b = np.zeros_like(a)
    expect_c = np.zeros_like(a)
    for frame in range(4):
        n1.set_param(0, float(frame))
        n2.set_param(1, frame)
        scheme.submit().wait()
        expect_b = expect_b + a * frame
        expect_c = expect_c + expect_b * 2 + frame
    np.testing.assert_allclose(bb.read(np.float32), expect_b)
    np.testing.assert_allclose(bc.read(np.float32), expect_c)
    assert n2.params[:2] == [int(np.float32(2).view(np.uint32)), 3]
    assert scheme.stats["submits"] == 4


def test_compile_error_carries_log(ctx):
    with pytest.raises(kiln.Error) as e:
        ctx.program(SCALE.replace("*=", "*= undefined_thing *"), name="broken.comp")
    assert e.value.code == "KILN_ERR_COMPILE"
    assert "broken.comp" in str(e.value) and "undefined_thing" in str(e.value)


def test_stale_handle(ctx):
    buf = ctx.buffer(nbytes=64)
    buf.destroy()
    with pytest.raises(kiln.Error) as e:
        buf.read(np.uint32)
    assert e.value.code == "KILN_ERR_HANDLE"
    assert isinstance(e.value, Exception)


def test_wrong_binding(ctx):
    prog = ctx.program(ADD, name="add.comp")
    buf = ctx.buffer(nbytes=1024)
    scheme = ctx.scheme()
    with pytest.raises(kiln.Error) as e:
        scheme.add_node(prog, bindings={0: buf, 5: buf}, groups=1)
    assert e.value.code in ("KILN_ERR_LAYOUT", "KILN_ERR_INVALID")
    assert e.value.message


def test_interface(ctx):
    itf = ctx.program(ADD, name="add.comp").interface
    assert [(b["binding"], b["kind"], b["read"], b["write"]) for b in itf["bindings"]] == [
        (0, "storage_buffer", True, False), (1, "storage_buffer", True, True)]
    assert itf["workgroup_size"] == (64, 1, 1)
    assert itf["params_read"] == [0, 1]
    assert itf["entry"] == "main"


def test_constants_and_defines(ctx):
    src = """#version 450
layout(local_size_x = 64) in;
layout(constant_id = 3) const uint K = 1;
layout(std430, binding = 0) buffer D { uint d[]; };
void main() { d[gl_GlobalInvocationID.x] = K + OFFSET; }
"""
    prog = ctx.program(src, name="k.comp", defines={"OFFSET": "10u"}, constants={3: 7})
    buf = ctx.buffer(nbytes=256)
    s = ctx.scheme()
    s.add_node(prog, bindings={0: buf}, groups=1)
    s.submit().wait()
    assert (buf.read(np.uint32) == 17).all()


def test_hlsl_and_spirv(ctx, tmp_path):
    hlsl = """RWStructuredBuffer<uint> o : register(u0);
[numthreads(64, 1, 1)]
void CSMain(uint3 id : SV_DispatchThreadID) { o[id.x] = id.x * 3u; }
"""
    prog = ctx.program(hlsl, language="hlsl", entry="CSMain", name="triple.hlsl")
    buf = ctx.buffer(nbytes=1024)
    s = ctx.scheme()
    s.add_node(prog, bindings={0: buf}, groups=4)
    s.submit().wait()
    assert (buf.read(np.uint32) == np.arange(256, dtype=np.uint32) * 3).all()

    comp = tmp_path / "k.comp"
    comp.write_text("#version 450\nlayout(local_size_x = 64) in;\n"
                    "layout(std430, binding = 0) buffer D { uint d[]; };\n"
                    "void main() { d[gl_GlobalInvocationID.x] = gl_GlobalInvocationID.x + 5u; }\n")
    spv = tmp_path / "k.spv"
    subprocess.run(["glslangValidator", "-V", "--target-env", "vulkan1.1", str(comp), "-o", str(spv)],
                   check=True, capture_output=True)
    module = ctx.program(spv.read_bytes(), name="k.spv")
    s2 = ctx.scheme()
    s2.add_node(module, bindings={0: buf}, groups=4)
    s2.submit().wait()
    assert (buf.read(np.uint32) == np.arange(256, dtype=np.uint32) + 5).all()
    with pytest.raises(ValueError, match="whole 32-bit words"):
        ctx.program(spv.read_bytes()[:-2])
    with pytest.raises(ValueError, match="language"):
        ctx.program(hlsl, language="cuda")


def test_preamble_function_like_defines_and_workgroup_size(ctx):
    src = """#version 450
layout(local_size_x_id = 233) in;
layout(std430, binding = 0) buffer D { uint d[]; };
void main() { uint i = gl_GlobalInvocationID.x; d[i] = TWICE(i) + gl_WorkGroupSize.x + BASE; }
"""
    prog = ctx.program(src, preamble="#define BASE 1000u\n", defines={"TWICE(x)": "((x) * 2u)"},
                       workgroup_size=(32,))
    assert prog.interface["workgroup_size"] == (32, 1, 1)
    buf = ctx.buffer(nbytes=1024)
    s = ctx.scheme()
    s.add_node(prog, bindings={0: buf}, groups=8)
    s.submit().wait()
    assert (buf.read(np.uint32) == np.arange(256, dtype=np.uint32) * 2 + 32 + 1000).all()


def test_cdef_matches_header():
    here = os.path.join(os.path.dirname(__file__), "..")
    r = subprocess.run([sys.executable, os.path.join(here, "gen_cdef.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
