/* What ren._node's two sources share: _node.c (Node's constructor, the module) and _rewrite.c
 * (the rewrite driver's walk and rule matching). */
#ifndef REN_CORE_H
#define REN_CORE_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define AT(t, i) PyTuple_GET_ITEM((t), (i))
#define SLOT(node, at) (*(PyObject **)((char *)(node) + (at))) /* a Node's slot */

/* _node.c */
extern Py_ssize_t ren_op_at, ren_dtype_at, ren_src_at, ren_arg_at; /* set by setup() */
extern PyObject *ren_empty;                                        /* () */
int ren_ready(void); /* setup() was called; else 0 with a RuntimeError set */
/* Node(op, dtype, src, arg) of class cls, hash-consed (src: any iterable, or NULL for ()) */
PyObject *ren_intern(PyTypeObject *cls, PyObject *op, PyObject *dtype, PyObject *src,
                     PyObject *arg);

/* _rewrite.c */
int ren_rewrite_init(void); /* its interned strings, at module init */
PyObject *ren_rewrite_walk(PyObject *module, PyObject *args);
PyObject *ren_apply_rules(PyObject *module, PyObject *args);
#endif
