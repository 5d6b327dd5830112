/* ren._node's rewrite half: the matcher of ren.rewrite's patterns and rules (Pat.match,
 * Rule.apply, RuleSet.apply) and the rewrite driver's walk (ren.rewrite._walk), in C.  The
 * Python functions are the reference; tests/test_compiled_core.py holds the two to the same
 * results.  Node's constructor and the module are in _node.c. */
#include "_core.h"

static PyObject *name_str;           /* "name" (a Rule's) */
static PyObject *ctx_str, *orig_str; /* the keyword arguments a rule's function may ask for */

int ren_rewrite_init(void) {
    name_str = PyUnicode_InternFromString("name");
    ctx_str = PyUnicode_InternFromString("ctx");
    orig_str = PyUnicode_InternFromString("orig");
    return name_str == NULL || ctx_str == NULL || orig_str == NULL ? -1 : 0;
}

/* -- patterns and rules (ren.rewrite's Pat.match, Rule.apply, RuleSet.apply) ------------------- */
/* A compiled pattern (`Pat._c`): (ops or None, has_arg, arg, sub-patterns or None, name or None,
 * where or None, commutative); a compiled rule (`Rule._c`): (pattern, fn, wants_ctx,
 * wants_orig, the Rule). */

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
        int in = PySet_Contains(ops, SLOT(AT(src, reversed ? k - 1 - i : i), ren_op_at));
        if (in <= 0)
            return in;
    }
    return 1;
}

/* Pat.match: 1, 0, or -1 with an exception set; bindings go into env */
static int match(PyObject *pat, PyObject *n, PyObject *env) {
    PyObject *ops = AT(pat, 0);
    if (ops != Py_None) {
        int in = PySet_Contains(ops, SLOT(n, ren_op_at));
        if (in <= 0)
            return in;
    }
    if (AT(pat, 1) == Py_True) {
        PyObject *ne = PyObject_RichCompare(SLOT(n, ren_arg_at), AT(pat, 2), Py_NE);
        if (ne == NULL)
            return -1;
        int differ = PyObject_IsTrue(ne);
        Py_DECREF(ne);
        if (differ != 0)
            return differ < 0 ? -1 : 0;
    }
    PyObject *pats = AT(pat, 3);
    if (pats != Py_None) {
        PyObject *src = SLOT(n, ren_src_at);
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
        PyObject *out = m > 0 ? PyObject_Call(AT(rule, 1), ren_empty, env) : NULL;
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

PyObject *ren_apply_rules(PyObject *module, PyObject *args) {
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
static int visit(Stack *st, Entry *e, PyObject *done, PyObject *candidates, PyObject *ctx,
                 PyObject *enter, PyObject *keep_rebuilt, PyObject *keep_fired,
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
    PyObject *src = SLOT(n, ren_src_at);
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
    PyObject *op = SLOT(n, ren_op_at), *made;
    if (newsrc == NULL) {
        made = Py_NewRef(n);
    } else {
        made = ren_intern(Py_TYPE(n), op, SLOT(n, ren_dtype_at), newsrc, SLOT(n, ren_arg_at));
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
    PyObject *rules = PyDict_GetItemWithError(candidates, SLOT(made, ren_op_at)); /* borrowed */
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
PyObject *ren_rewrite_walk(PyObject *module, PyObject *args) {
    PyObject *root, *candidates, *ctx, *enter, *keep_rebuilt, *keep_fired, *on_cycle, *stats;
    Py_ssize_t most;
    if (!PyArg_ParseTuple(args, "OO!OOOOOO!n:rewrite_walk", &root, &PyDict_Type, &candidates,
                          &ctx, &enter, &keep_rebuilt, &keep_fired, &on_cycle, &PyDict_Type,
                          &stats, &most))
        return NULL;
    if (!ren_ready())
        return NULL;
    PyObject *keep_domain = PyUnicode_InternFromString("keep_domain");
    PyObject *done = PyDict_New(), *result = NULL;
    Stack st = {NULL, 0, 0};
    if (keep_domain == NULL || done == NULL || push(&st, root, 0, NULL, ren_empty) < 0)
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
