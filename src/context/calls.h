/* SPDX-License-Identifier: MIT */
/*
 * calls.h: reading the call catalogue (calls.def), the one list of every
 * public call that acts on a context.
 *
 * A row is
 *
 *   X(name, record, class, flags, params)     a call the context's ops answer
 *   L(name, record, class, flags)             a context's life (create, destroy): api/ writes these
 *
 * and params is a sequence of parameters after the context, each
 * (kind, type, name, what):
 *
 *   VAL     a value:                          type name
 *   IN      a pointer that must not be NULL:  type *name   (refused: "<what> is NULL")
 *   OPT     a pointer that may be NULL:       type *name
 *   OUT     an out pointer, not NULL:         type *name
 *   HOUT    an out handle, not NULL, zeroed before the call
 *   ARR     an out array, not NULL when the call's `cap` is above 0
 *   OPTOUT  an out pointer that may be NULL (the call gets a throwaway)
 *
 * From the rows come: struct rt_ops's members, named as the catalogue
 * names the calls (context.h); api/'s entry points kiln_<name> (check the
 * pointers, resolve and lock the context, call its op); the local and
 * remote ops tables (.name = l_name, .name = r_name); the server's applier
 * table (a_name); the wire's opcodes, names and record sizes (pipe.h). A
 * row without its l_, r_ or a_ function is a compile error.
 *
 * Adding a public call that works remotely:
 *   1. kiln.h: its prototype and documentation;
 *   2. calls.def: its row, at the end (its position is its opcode);
 *   3. context/context.c: l_<name>, the local runtime's;
 *   4. remote/client.c: r_<name>, encoding its request record (and
 *      pipe/pipe.h: the record, if none of the existing ones fits);
 *   5. remote/apply.c: a_<name>, decoding it on the server;
 *   6. a test (tests/remote/catalogue.sh checks kiln.h and the rows agree),
 *      and the docs.
 * api/ needs nothing: its entry point is generated.
 */
#ifndef KILN_CALLS_H
#define KILN_CALLS_H

#define KC_CAT(a, b) KC_CAT_(a, b)
#define KC_CAT_(a, b) a##b

/* The length of a sequence (a)(b)(c): 3 (at most 6). */
#define KC_SIZE(seq) KC_CAT(KC_SZ_0 seq, _N)
#define KC_SZ_0(...) KC_SZ_1
#define KC_SZ_1(...) KC_SZ_2
#define KC_SZ_2(...) KC_SZ_3
#define KC_SZ_3(...) KC_SZ_4
#define KC_SZ_4(...) KC_SZ_5
#define KC_SZ_5(...) KC_SZ_6
#define KC_SZ_0_N 0
#define KC_SZ_1_N 1
#define KC_SZ_2_N 2
#define KC_SZ_3_N 3
#define KC_SZ_4_N 4
#define KC_SZ_5_N 5
#define KC_SZ_6_N 6

/* KC_EACH(P, seq): P(kind, type, name, what) for each parameter, in order;
 * P is one of KC_DECL (", type name"), KC_ARG (", name") and KC_CHECK
 * (the statements that refuse a NULL pointer). */
#define KC_EACH(P, seq) KC_CAT(KC_EACH_, KC_SIZE(seq))(P, seq)
#define KC_EACH_0(P, seq)
#define KC_EACH_1(P, seq) KC_E1(P, KC_E_HEAD seq)
#define KC_EACH_2(P, seq) KC_E2(P, KC_E_HEAD seq)
#define KC_EACH_3(P, seq) KC_E3(P, KC_E_HEAD seq)
#define KC_EACH_4(P, seq) KC_E4(P, KC_E_HEAD seq)
#define KC_EACH_5(P, seq) KC_E5(P, KC_E_HEAD seq)
#define KC_EACH_6(P, seq) KC_E6(P, KC_E_HEAD seq)
/* KC_E_HEAD (a)(b)(c) gives "(a), (b)(c)": the head, a comma, the rest. */
#define KC_E_HEAD(...) (__VA_ARGS__),
#define KC_E1(P, ...) KC_E1_(P, __VA_ARGS__)
#define KC_E1_(P, head, rest) KC_APPLY(P, head)
#define KC_E2(P, ...) KC_E2_(P, __VA_ARGS__)
#define KC_E2_(P, head, rest) KC_APPLY(P, head) KC_EACH_1(P, rest)
#define KC_E3(P, ...) KC_E3_(P, __VA_ARGS__)
#define KC_E3_(P, head, rest) KC_APPLY(P, head) KC_EACH_2(P, rest)
#define KC_E4(P, ...) KC_E4_(P, __VA_ARGS__)
#define KC_E4_(P, head, rest) KC_APPLY(P, head) KC_EACH_3(P, rest)
#define KC_E5(P, ...) KC_E5_(P, __VA_ARGS__)
#define KC_E5_(P, head, rest) KC_APPLY(P, head) KC_EACH_4(P, rest)
#define KC_E6(P, ...) KC_E6_(P, __VA_ARGS__)
#define KC_E6_(P, head, rest) KC_APPLY(P, head) KC_EACH_5(P, rest)
#define KC_APPLY(P, tuple) P tuple

/* A parameter as the op's and the entry point's declaration lists it. */
#define KC_DECL(kind, type, name, what) KC_CAT(KC_DECL_, kind)(type, name)
#define KC_DECL_VAL(type, name) , type name
#define KC_DECL_IN(type, name) , type *name
#define KC_DECL_OPT(type, name) , type *name
#define KC_DECL_OUT(type, name) , type *name
#define KC_DECL_HOUT(type, name) , type *name
#define KC_DECL_ARR(type, name) , type *name
#define KC_DECL_OPTOUT(type, name) , type *name
/* As the entry point passes it on. */
#define KC_ARG(kind, type, name, what) KC_CAT(KC_ARG_, kind)(type, name)
#define KC_ARG_VAL(type, name) , name
#define KC_ARG_IN(type, name) , name
#define KC_ARG_OPT(type, name) , name
#define KC_ARG_OUT(type, name) , name
#define KC_ARG_HOUT(type, name) , name
#define KC_ARG_ARR(type, name) , name
#define KC_ARG_OPTOUT(type, name) , name ? name : &(type){0}
/* What the entry point checks first (KC_NEED is the caller's: refuse a
 * NULL pointer naming it). */
#define KC_CHECK(kind, type, name, what) KC_CAT(KC_CHECK_, kind)(name, what)
#define KC_CHECK_VAL(name, what)
#define KC_CHECK_IN(name, what) KC_NEED(name, what);
#define KC_CHECK_OPT(name, what)
#define KC_CHECK_OUT(name, what) KC_NEED(name, what);
#define KC_CHECK_HOUT(name, what) KC_NEED(name, what); name->id = 0;
#define KC_CHECK_ARR(name, what) if (cap) KC_NEED(name, what);
#define KC_CHECK_OPTOUT(name, what)

#endif
