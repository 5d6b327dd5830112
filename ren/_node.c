/* ren._node: the IR's core in C: the hash-consing constructor of `ren.node.Node`, and the walk
 * of the rewrite driver (`rewrite_walk`, at the end; `ren.rewrite._walk` is its reference).
 *
 * It does exactly what `ren.node._py_new` does (that function is the reference and the fallback
 * when this extension is not built): build the key
 *     (op, dtype, src, type(arg), arg, tuple(map(type, arg)) if type(arg) is tuple else None),
 * return the live node the weak table holds for it, or make the node (its slots set through
 * their member descriptors), publish a weak reference to it with one atomic dict setdefault and
 * hand the rare dead-entry race to the Python `_replace_dead`.  A schedule of a bootstrapping
 * makes ~175,000 nodes; in Python each took ~1.1 us (a look-up) to ~1.5 us (a new node).
 *
 * `setup(...)` receives the table, the weak reference class and the descriptors from
 * `ren.node` once; `ABI` is checked there, so a stale build is never used. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h> /* T_OBJECT_EX: the slots' member type */

#define REN_NODE_ABI 4 /* bump when setup()'s arguments or the functions change */
#ifndef REN_NODE_SOURCE
#define REN_NODE_SOURCE "" /* setup.py passes the SHA-256 of this file */
#endif

static PyObject *table;        /* dict: key -> _Ref */
static PyObject *ref_type;     /* ren.node._Ref */
static PyObject *drop;         /* its callback */
static PyObject *replace_dead; /* ren.node._replace_dead(key, node) */
static PyObject *set_op, *set_dtype, *set_src, *set_arg, *set_spec, *set_key; /* descriptors */
static PyObject *remove_dead;  /* _weakref._remove_dead_weakref(dict, key) */
static PyObject *empty;        /* () */
static PyObject *default_dtype; /* DType.U32 */
static Py_ssize_t op_at, dtype_at, src_at, arg_at; /* the slots' offsets in a Node */
static PyObject *name_str;     /* "name" (a Rule's) */
static PyObject *ctx_str, *orig_str; /* the keyword arguments a rule's function may ask for */

static int put(PyObject *descr, PyObject *obj, PyObject *value) {
    return Py_TYPE(descr)->tp_descr_set(descr, obj, value);
}

static PyObject *intern(PyTypeObject *cls, PyObject *op, PyObject *dtype, PyObject *src,
                        PyObject *arg) {
    if (table == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ren._node: setup() was not called");
        return NULL;
    }
    PyObject *srct = src == NULL ? Py_NewRef(empty) : PySequence_Tuple(src);
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
    if (dtype == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ren._node: setup() was not called");
        return NULL;
    }
    return intern(cls, op, dtype, src, arg);
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
    Py_ssize_t *offsets[] = {&op_at, &dtype_at, &src_at, &arg_at};
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



/* -- patterns and rules (ren.rewrite's Pat.match, Rule.apply, RuleSet.apply) ------------------- */
/* A compiled pattern (`Pat._c`): (ops or None, has_arg, arg, sub-patterns or None, name or None,
 * where or None, commutative); a compiled rule (`Rule._c`): (pattern, fn, wants_ctx,
 * wants_orig, the Rule). */
#define AT(t, i) PyTuple_GET_ITEM((t), (i))
#define SLOT(node, at) (*(PyObject **)((char *)(node) + (at))) /* a Node's slot */

static int match(PyObject *pat, PyObject *n, PyObject *env);

/* the sub-patterns against n's sources in one order (reversed: the commutative other one) */
static int match_sources(PyObject *pats, PyObject *src, int reversed, PyObject *env) {
    Py_ssize_t k = PyTuple_GET_SIZE(pats);
    for (Py_ssize_t i = 0; i < k; i++) {
        int r = match(AT(pats, i), AT(src, reversed ? k - 1 - i : i), env);
        if (r <= 0)
            return r;
    }
    return 1;
}

/* whether each operand's op is one its sub-pattern can match (before copying the bindings) */
static int ops_fit(PyObject *pats, PyObject *src, int reversed) {
    Py_ssize_t k = PyTuple_GET_SIZE(pats);
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *ops = AT(AT(pats, i), 0);
        if (ops == Py_None)
            continue;
        int in = PySet_Contains(ops, SLOT(AT(src, reversed ? k - 1 - i : i), op_at));
        if (in <= 0)
            return in;
    }
    return 1;
}

/* Pat.match: 1, 0, or -1 with an exception set; bindings go into env */
static int match(PyObject *pat, PyObject *n, PyObject *env) {
    PyObject *ops = AT(pat, 0);
    if (ops != Py_None) {
        int in = PySet_Contains(ops, SLOT(n, op_at));
        if (in <= 0)
            return in;
    }
    if (AT(pat, 1) == Py_True) {
        PyObject *ne = PyObject_RichCompare(SLOT(n, arg_at), AT(pat, 2), Py_NE);
        if (ne == NULL)
            return -1;
        int differ = PyObject_IsTrue(ne);
        Py_DECREF(ne);
        if (differ != 0)
            return differ < 0 ? -1 : 0;
    }
    PyObject *pats = AT(pat, 3);
    if (pats != Py_None) {
        PyObject *src = SLOT(n, src_at);
        if (PyTuple_GET_SIZE(pats) != PyTuple_GET_SIZE(src))
            return 0;
        if (AT(pat, 6) != Py_True) {
            int r = match_sources(pats, src, 0, env);
            if (r <= 0)
                return r;
        } else { /* each order in a copy of the bindings; the first that matches keeps its own */
            int found = 0;
            for (int reversed = 0; reversed < 2 && !found; reversed++) {
                int fit = ops_fit(pats, src, reversed);
                if (fit < 0)
                    return -1;
                if (!fit)
                    continue;
                PyObject *trial = PyDict_Copy(env);
                if (trial == NULL)
                    return -1;
                int r = match_sources(pats, src, reversed, trial);
                if (r > 0 && PyDict_Update(env, trial) < 0)
                    r = -1;
                Py_DECREF(trial);
                if (r < 0)
                    return -1;
                found = r;
            }
            if (!found)
                return 0;
        }
    }
    PyObject *name = AT(pat, 4);
    if (name != Py_None) {
        PyObject *bound = PyDict_GetItemWithError(env, name);
        if (bound != NULL && bound != n)
            return 0; /* the same name twice must be the same node */
        if ((bound == NULL && PyErr_Occurred()) || PyDict_SetItem(env, name, n) < 0)
            return -1;
    }
    PyObject *where = AT(pat, 5);
    if (where == Py_None)
        return 1;
    PyObject *ok = PyObject_CallOneArg(where, n);
    if (ok == NULL)
        return -1;
    int r = PyObject_IsTrue(ok);
    Py_DECREF(ok);
    return r;
}

/* RuleSet.apply over one op's compiled rules: (replacement, Rule) for the first rule whose
 * pattern matches and whose function gives a node other than n (None and n mean "no"), else
 * None; NULL with an exception set */
static PyObject *apply_rules(PyObject *rules, PyObject *n, PyObject *ctx, PyObject *orig) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(rules); i++) {
        PyObject *rule = AT(rules, i);
        PyObject *env = PyDict_New();
        if (env == NULL)
            return NULL;
        int m = match(AT(rule, 0), n, env);
        if (m > 0 && AT(rule, 2) == Py_True && PyDict_SetItem(env, ctx_str, ctx) < 0)
            m = -1;
        if (m > 0 && AT(rule, 3) == Py_True &&
            PyDict_SetItem(env, orig_str, orig == Py_None ? n : orig) < 0)
            m = -1;
        PyObject *out = m > 0 ? PyObject_Call(AT(rule, 1), empty, env) : NULL;
        Py_DECREF(env);
        if (m < 0 || (m > 0 && out == NULL))
            return NULL;
        if (out != NULL && out != Py_None && out != n) {
            PyObject *hit = PyTuple_Pack(2, out, AT(rule, 4));
            Py_DECREF(out);
            return hit;
        }
        Py_XDECREF(out);
    }
    Py_RETURN_NONE;
}

static PyObject *py_apply_rules(PyObject *module, PyObject *args) {
    PyObject *rules, *n, *ctx, *orig;
    if (!PyArg_ParseTuple(args, "O!OOO:apply_rules", &PyTuple_Type, &rules, &n, &ctx, &orig))
        return NULL;
    return apply_rules(rules, n, ctx, orig);
}

/* -- the rewrite driver (ren.rewrite) --------------------------------------------------------- */

typedef struct {
    PyObject *node, *origin, *trail; /* owned (origin may be NULL) */
    int phase;
} Entry;

typedef struct {
    Entry *at;
    Py_ssize_t len, cap;
} Stack;

static int push(Stack *st, PyObject *node, int phase, PyObject *origin, PyObject *trail) {
    if (st->len == st->cap) {
        Py_ssize_t cap = st->cap ? 2 * st->cap : 1024;
        Entry *more = PyMem_Realloc(st->at, (size_t)cap * sizeof(Entry));
        if (more == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        st->at = more;
        st->cap = cap;
    }
    Entry *e = &st->at[st->len++];
    e->node = Py_NewRef(node);
    e->origin = Py_XNewRef(origin);
    e->trail = Py_NewRef(trail);
    e->phase = phase;
    return 0;
}

static void forget(Entry *e) {
    Py_DECREF(e->node);
    Py_XDECREF(e->origin);
    Py_DECREF(e->trail);
}

/* counts[key] += 1 */
static int count(PyObject *counts, PyObject *key) {
    PyObject *was = PyDict_GetItemWithError(counts, key); /* borrowed */
    if (was == NULL && PyErr_Occurred())
        return -1;
    Py_ssize_t before = was == NULL ? 0 : PyLong_AsSsize_t(was);
    if (before == -1 && PyErr_Occurred())
        return -1;
    PyObject *now = PyLong_FromSsize_t(before + 1);
    if (now == NULL)
        return -1;
    int r = PyDict_SetItem(counts, key, now);
    Py_DECREF(now);
    return r;
}

/* done[key], borrowed; a KeyError (as the Python driver's look-up) when missing */
static PyObject *lookup(PyObject *done, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(done, key);
    if (v == NULL && !PyErr_Occurred())
        PyErr_SetObject(PyExc_KeyError, key);
    return v;
}

/* One visit of the walk (see `rewrite_walk`); 0 or -1 with an exception set. */
static int visit(Stack *st, Entry *e, PyObject *done, PyObject *candidates, PyObject *ctx, PyObject *enter, PyObject *keep_rebuilt, PyObject *keep_fired,
                 PyObject *on_cycle, PyObject *stats, PyObject *keep_domain, Py_ssize_t most) {
    PyObject *n = e->node, *trail = e->trail;
    if (e->phase == 2) { /* link the replaced node to its replacement's result */
        PyObject *v = lookup(done, n);
        return v == NULL ? -1 : PyDict_SetItem(done, e->origin, v);
    }
    int seen = PyDict_Contains(done, n);
    if (seen != 0)
        return seen < 0 ? -1 : 0;
    if (enter != Py_None) { /* a boundary: kept as it is, its sources not visited */
        PyObject *r = PyObject_CallOneArg(enter, n);
        if (r == NULL)
            return -1;
        int in = PyObject_IsTrue(r);
        Py_DECREF(r);
        if (in <= 0)
            return in < 0 ? -1 : PyDict_SetItem(done, n, n);
    }
    PyObject *src = SLOT(n, src_at);
    if (src == NULL || !PyTuple_CheckExact(src)) {
        PyErr_SetString(PyExc_TypeError, "rewrite: a node's src is not a tuple");
        return -1;
    }
    Py_ssize_t k = PyTuple_GET_SIZE(src);
    if (e->phase == 0) { /* sources first, then this node again */
        if (push(st, n, 1, NULL, trail) < 0)
            return -1;
        for (Py_ssize_t i = k - 1; i >= 0; i--) {
            PyObject *s = PyTuple_GET_ITEM(src, i);
            int has = PyDict_Contains(done, s);
            if (has < 0 || (!has && push(st, s, 0, NULL, trail) < 0))
                return -1;
        }
        return 0;
    }
    /* rebuild the node on its rewritten sources (the same node when none changed) */
    PyObject *newsrc = NULL;
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *s = PyTuple_GET_ITEM(src, i), *v = lookup(done, s);
        if (v == NULL) {
            Py_XDECREF(newsrc);
            return -1;
        }
        if (v != s && newsrc == NULL) {
            if ((newsrc = PyTuple_New(k)) == NULL)
                return -1;
            for (Py_ssize_t j = 0; j < i; j++)
                PyTuple_SET_ITEM(newsrc, j, Py_NewRef(PyTuple_GET_ITEM(src, j)));
        }
        if (newsrc != NULL)
            PyTuple_SET_ITEM(newsrc, i, Py_NewRef(v));
    }
    PyObject *op = SLOT(n, op_at), *made;
    if (newsrc == NULL) {
        made = Py_NewRef(n);
    } else {
        made = intern(Py_TYPE(n), op, SLOT(n, dtype_at), newsrc, SLOT(n, arg_at));
        Py_DECREF(newsrc);
        if (made == NULL)
            return -1;
    }
    int rc = -1;
    PyObject *hit = NULL, *out = NULL, *name = NULL, *longer = NULL;
    if (made != n) {
        if (keep_rebuilt != Py_None) {
            PyObject *fixed = PyObject_CallFunctionObjArgs(keep_rebuilt, n, made, NULL);
            if (fixed == NULL)
                goto end;
            if (fixed != made) { /* the rebuilt node infers another domain: restore it */
                rc = count(stats, keep_domain) < 0 || push(st, fixed, 2, n, trail) < 0 ||
                     push(st, fixed, 0, NULL, trail) < 0 ? -1 : 0;
                Py_DECREF(fixed);
                goto end;
            }
            Py_DECREF(fixed);
        }
        PyObject *v = PyDict_GetItemWithError(done, made);
        if (v != NULL) {
            rc = PyDict_SetItem(done, n, v);
            goto end;
        }
        if (PyErr_Occurred())
            goto end;
    }
    PyObject *rules = PyDict_GetItemWithError(candidates, SLOT(made, op_at)); /* borrowed */
    if (rules == NULL && PyErr_Occurred())
        goto end;
    if (rules != NULL) {
        if (!PyTuple_CheckExact(rules)) {
            PyErr_SetString(PyExc_TypeError, "rewrite: an op's rules must be a tuple");
            goto end;
        }
        if ((hit = apply_rules(rules, made, ctx, n)) == NULL)
            goto end;
    }
    if (rules == NULL || hit == Py_None) {
        rc = PyDict_SetItem(done, n, made) < 0 || PyDict_SetDefault(done, made, made) == NULL
                 ? -1 : 0;
        goto end;
    }
    PyObject *rule = PyTuple_GET_ITEM(hit, 1);
    out = keep_fired == Py_None
              ? Py_NewRef(PyTuple_GET_ITEM(hit, 0))
              : PyObject_CallFunctionObjArgs(keep_fired, made, PyTuple_GET_ITEM(hit, 0), rule,
                                             NULL);
    if (out == NULL || (name = PyObject_GetAttr(rule, name_str)) == NULL ||
        count(stats, name) < 0)
        goto end;
    /* the rules fired on the way here, inherited by the replacement: a cycle keeps growing it */
    Py_ssize_t t = PyTuple_GET_SIZE(trail);
    if ((longer = PyTuple_New(t + 1)) == NULL)
        goto end;
    for (Py_ssize_t i = 0; i < t; i++)
        PyTuple_SET_ITEM(longer, i, Py_NewRef(PyTuple_GET_ITEM(trail, i)));
    PyTuple_SET_ITEM(longer, t, Py_NewRef(name));
    if (t + 1 > most) {
        PyObject *r = PyObject_CallFunctionObjArgs(on_cycle, n, longer, NULL);
        Py_XDECREF(r);
        if (r != NULL)
            PyErr_SetString(PyExc_RuntimeError, "rewrite: on_cycle returned");
        goto end;
    }
    rc = push(st, out, 2, n, longer) < 0 || push(st, out, 0, NULL, longer) < 0 ? -1 : 0;
end:
    Py_DECREF(made);
    Py_XDECREF(hit);
    Py_XDECREF(out);
    Py_XDECREF(name);
    Py_XDECREF(longer);
    return rc;
}

/* rewrite_walk(root, candidates, ctx, enter, keep_rebuilt, keep_fired, on_cycle, stats,
 *              max_rewrites) -> what root became.
 * The loop of ren.rewrite's Python driver (`_walk`, its reference), step for step: the same
 * stack of (node, phase, origin, trail), the same look-ups and callbacks, the same firings
 * counted in `stats`; `candidates` maps an op to its compiled rules (`RuleSet._compiled`),
 * applied as RuleSet.apply does.  None for enter/keep_rebuilt/keep_fired: "not asked for". */
static PyObject *rewrite_walk(PyObject *module, PyObject *args) {
    PyObject *root, *candidates, *ctx, *enter, *keep_rebuilt, *keep_fired, *on_cycle, *stats;
    Py_ssize_t most;
    if (!PyArg_ParseTuple(args, "OO!OOOOOO!n:rewrite_walk", &root, &PyDict_Type, &candidates,
                          &ctx, &enter, &keep_rebuilt, &keep_fired, &on_cycle, &PyDict_Type,
                          &stats, &most))
        return NULL;
    if (table == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ren._node: setup() was not called");
        return NULL;
    }
    PyObject *keep_domain = PyUnicode_InternFromString("keep_domain");
    PyObject *done = PyDict_New(), *result = NULL;
    Stack st = {NULL, 0, 0};
    if (keep_domain == NULL || done == NULL || push(&st, root, 0, NULL, empty) < 0)
        goto end;
    while (st.len > 0) {
        Entry e = st.at[--st.len]; /* (its references are this loop's now) */
        int rc = visit(&st, &e, done, candidates, ctx, enter, keep_rebuilt, keep_fired,
                       on_cycle, stats, keep_domain, most);
        forget(&e);
        if (rc < 0)
            goto end;
    }
    result = lookup(done, root);
    Py_XINCREF(result);
end:
    while (st.len > 0)
        forget(&st.at[--st.len]);
    PyMem_Free(st.at);
    Py_XDECREF(done);
    Py_XDECREF(keep_domain);
    return result;
}

static PyMethodDef methods[] = {
    {"alloc", alloc, METH_O, "alloc(cls): a bare instance of a NodeBase subclass"},
    {"drop", drop_entry, METH_O, "drop(ref): the table's weak reference callback"},
    {"rewrite_walk", rewrite_walk, METH_VARARGS,
     "rewrite_walk(root, candidates, ctx, enter, keep_rebuilt, keep_fired, on_cycle, stats, "
     "max_rewrites): ren.rewrite's walk"},
    {"apply_rules", py_apply_rules, METH_VARARGS,
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
    empty = PyTuple_New(0);
    name_str = PyUnicode_InternFromString("name");
    ctx_str = PyUnicode_InternFromString("ctx");
    orig_str = PyUnicode_InternFromString("orig");
    if (empty == NULL || name_str == NULL || ctx_str == NULL || orig_str == NULL)
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
