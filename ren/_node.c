/* ren._node: the IR's core in C.  This file: the hash-consing constructor of `ren.node.Node`
 * and the module; _rewrite.c: the rewrite driver's walk and rule matching (`rewrite_walk`,
 * `apply_rules`; `ren.rewrite` holds their Python reference).
 *
 * The constructor does exactly what `ren.node._py_new` does (that function is the reference and the fallback
 * when this extension is not built): build the key
 *     (op, dtype, src, type(arg), arg, tuple(map(type, arg)) if type(arg) is tuple else None),
 * return the live node the weak table holds for it, or make the node (its slots set through
 * their member descriptors), publish a weak reference to it with one atomic dict setdefault and
 * hand the rare dead-entry race to the Python `_replace_dead`.  A schedule of a bootstrapping
 * makes ~175,000 nodes; in Python each took ~1.1 us (a look-up) to ~1.5 us (a new node).
 *
 * `setup(...)` receives the table, the weak reference class and the descriptors from
 * `ren.node` once; `ABI` is checked there, so a stale build is never used. */
#include "_core.h"
#include <structmember.h> /* T_OBJECT_EX: the slots' member type */

#define REN_NODE_ABI 4 /* bump when setup()'s arguments or the functions change */
#ifndef REN_NODE_SOURCE
#define REN_NODE_SOURCE "" /* setup.py passes the SHA-256 of the extension's sources */
#endif

static PyObject *table;        /* dict: key -> _Ref */
static PyObject *ref_type;     /* ren.node._Ref */
static PyObject *drop;         /* its callback */
static PyObject *replace_dead; /* ren.node._replace_dead(key, node) */
static PyObject *set_op, *set_dtype, *set_src, *set_arg, *set_spec, *set_key; /* descriptors */
static PyObject *remove_dead;  /* _weakref._remove_dead_weakref(dict, key) */
PyObject *ren_empty; /* () */
static PyObject *default_dtype; /* DType.U32 */
Py_ssize_t ren_op_at, ren_dtype_at, ren_src_at, ren_arg_at; /* the slots' offsets in a Node */

int ren_ready(void) {
    if (table != NULL)
        return 1;
    PyErr_SetString(PyExc_RuntimeError, "ren._node: setup() was not called");
    return 0;
}

static int put(PyObject *descr, PyObject *obj, PyObject *value) {
    return Py_TYPE(descr)->tp_descr_set(descr, obj, value);
}

PyObject *ren_intern(PyTypeObject *cls, PyObject *op, PyObject *dtype, PyObject *src,
                        PyObject *arg) {
    if (!ren_ready())
        return NULL;
    PyObject *srct = src == NULL ? Py_NewRef(ren_empty) : PySequence_Tuple(src);
    if (srct == NULL)
        return NULL;
    PyObject *types;
    if (PyTuple_CheckExact(arg)) {
        Py_ssize_t n = PyTuple_GET_SIZE(arg);
        types = PyTuple_New(n);
        if (types == NULL) {
            Py_DECREF(srct);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < n; i++)
            PyTuple_SET_ITEM(types, i, Py_NewRef((PyObject *)Py_TYPE(PyTuple_GET_ITEM(arg, i))));
    } else {
        types = Py_NewRef(Py_None);
    }
    PyObject *key = PyTuple_Pack(6, op, dtype, srct, (PyObject *)Py_TYPE(arg), arg, types);
    Py_DECREF(types);
    if (key == NULL) {
        Py_DECREF(srct);
        return NULL;
    }
    PyObject *ref = PyDict_GetItemWithError(table, key); /* borrowed */
    if (ref != NULL) {
        PyObject *node = PyWeakref_GetObject(ref); /* borrowed */
        if (node == NULL)
            goto fail;
        if (node != Py_None) {
            Py_INCREF(node);
            Py_DECREF(key);
            Py_DECREF(srct);
            return node;
        }
    } else if (PyErr_Occurred()) {
        goto fail;
    }
    /* a new node: object.__new__(cls), its slots set by their own setters */
    PyObject *node = cls->tp_alloc(cls, 0);
    if (node == NULL)
        goto fail;
    if (put(set_op, node, op) < 0 || put(set_dtype, node, dtype) < 0 ||
        put(set_src, node, srct) < 0 || put(set_arg, node, arg) < 0 ||
        put(set_spec, node, Py_None) < 0) {
        Py_DECREF(node);
        goto fail;
    }
    PyObject *newref = PyObject_CallFunctionObjArgs(ref_type, node, drop, NULL);
    if (newref == NULL || put(set_key, newref, key) < 0) {
        Py_XDECREF(newref);
        Py_DECREF(node);
        goto fail;
    }
    /* one atomic setdefault: two threads building the same key get one node */
    PyObject *first = PyDict_SetDefault(table, key, newref); /* borrowed */
    Py_DECREF(newref);
    if (first == NULL) {
        Py_DECREF(node);
        goto fail;
    }
    if (first != newref) {
        PyObject *other = PyWeakref_GetObject(first); /* borrowed */
        if (other == NULL) {
            Py_DECREF(node);
            goto fail;
        }
        if (other != Py_None) {
            Py_INCREF(other);
            Py_DECREF(node);
            node = other;
        } else {
            PyObject *made = PyObject_CallFunctionObjArgs(replace_dead, key, node, NULL);
            Py_DECREF(node);
            node = made;
        }
    }
    Py_DECREF(key);
    Py_DECREF(srct);
    return node;
fail:
    Py_DECREF(key);
    Py_DECREF(srct);
    return NULL;
}

/* NodeBase.__new__: Node(op, dtype=DType.U32, src=(), arg=None) */
static PyObject *node_new(PyTypeObject *cls, PyObject *args, PyObject *kwargs) {
    PyObject *op, *dtype = default_dtype, *src = NULL, *arg = Py_None;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if ((kwargs == NULL || PyDict_GET_SIZE(kwargs) == 0) && n >= 1 && n <= 4) {
        op = PyTuple_GET_ITEM(args, 0); /* (the common call: positional) */
        if (n > 1)
            dtype = PyTuple_GET_ITEM(args, 1);
        if (n > 2)
            src = PyTuple_GET_ITEM(args, 2);
        if (n > 3)
            arg = PyTuple_GET_ITEM(args, 3);
    } else {
        static char *names[] = {"op", "dtype", "src", "arg", NULL};
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOO:Node", names, &op, &dtype, &src,
                                         &arg))
            return NULL;
    }
    /* (dtype's default comes from setup(), which ren_intern checks was called first) */
    return ren_intern(cls, op, dtype, src, arg);
}

static PyTypeObject NodeBase = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ren._node.NodeBase",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = node_new,
    .tp_doc = "The base of ren.node.Node when this extension is built: its constructor "
              "hash-conses in C.",
};

/* drop(ref): the weak references' callback: a dead node's entry leaves the table (only if it
 * is still the dead one: it may have been replaced), as ren.node._drop does */
static PyObject *drop_entry(PyObject *module, PyObject *ref) {
    if (table == NULL || remove_dead == NULL)
        Py_RETURN_NONE;
    PyObject *key = Py_TYPE(set_key)->tp_descr_get(set_key, ref, (PyObject *)Py_TYPE(ref));
    if (key == NULL)
        return NULL;
    PyObject *done = PyObject_CallFunctionObjArgs(remove_dead, table, key, NULL);
    Py_DECREF(key);
    return done;
}

/* alloc(cls): a bare instance (slots unset), for the Python reference constructor */
static PyObject *alloc(PyObject *module, PyObject *cls) {
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &NodeBase)) {
        PyErr_SetString(PyExc_TypeError, "alloc: expected a subclass of NodeBase");
        return NULL;
    }
    return ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
}

static PyObject *setup(PyObject *module, PyObject *args) {
    PyObject *t, *r, *d, *rd, *o, *dt, *s, *a, *sp, *k, *dd, *rm;
    if (!PyArg_ParseTuple(args, "O!OOOOOOOOOOO:setup", &PyDict_Type, &t, &r, &d, &rd, &o, &dt,
                          &s, &a, &sp, &k, &dd, &rm))
        return NULL;
    if (Py_TYPE(k)->tp_descr_get == NULL) {
        PyErr_SetString(PyExc_TypeError, "ren._node.setup: the key descriptor has no getter");
        return NULL;
    }
    PyObject *descrs[] = {o, dt, s, a, sp, k};
    for (int i = 0; i < 6; i++) {
        if (Py_TYPE(descrs[i])->tp_descr_set == NULL) {
            PyErr_SetString(PyExc_TypeError, "ren._node.setup: a slot descriptor has no setter");
            return NULL;
        }
    }
    PyObject *members[] = {o, dt, s, a};
    Py_ssize_t *offsets[] = {&ren_op_at, &ren_dtype_at, &ren_src_at, &ren_arg_at};
    for (int i = 0; i < 4; i++) {
        if (!Py_IS_TYPE(members[i], &PyMemberDescr_Type) ||
            ((PyMemberDescrObject *)members[i])->d_member->type != T_OBJECT_EX) {
            PyErr_SetString(PyExc_TypeError, "ren._node.setup: a Node slot is not a member");
            return NULL;
        }
        *offsets[i] = ((PyMemberDescrObject *)members[i])->d_member->offset;
    }
    PyObject **kept[] = {&table,   &ref_type, &drop,     &replace_dead,  &set_op,     &set_dtype,
                         &set_src, &set_arg,  &set_spec, &set_key,       &default_dtype,
                         &remove_dead};
    PyObject *given[] = {t, r, d, rd, o, dt, s, a, sp, k, dd, rm};
    for (int i = 0; i < 12; i++)
        Py_XSETREF(*kept[i], Py_NewRef(given[i]));
    Py_RETURN_NONE;
}



static PyMethodDef methods[] = {
    {"alloc", alloc, METH_O, "alloc(cls): a bare instance of a NodeBase subclass"},
    {"drop", drop_entry, METH_O, "drop(ref): the table's weak reference callback"},
    {"rewrite_walk", ren_rewrite_walk, METH_VARARGS,
     "rewrite_walk(root, candidates, ctx, enter, keep_rebuilt, keep_fired, on_cycle, stats, "
     "max_rewrites): ren.rewrite's walk"},
    {"apply_rules", ren_apply_rules, METH_VARARGS,
     "apply_rules(rules, node, ctx, orig): RuleSet.apply over compiled rules"},
    {"setup", setup, METH_VARARGS,
     "setup(table, Ref, drop, replace_dead, descriptors..., U32, remove_dead)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "ren._node", "Node's hash-consing constructor in C (ren.node).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__node(void) {
    ren_empty = PyTuple_New(0);
    if (ren_empty == NULL || ren_rewrite_init() < 0)
        return NULL;
    if (PyType_Ready(&NodeBase) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "NodeBase", (PyObject *)&NodeBase) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "ABI", REN_NODE_ABI) < 0 ||
        PyModule_AddStringConstant(m, "SOURCE", REN_NODE_SOURCE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
