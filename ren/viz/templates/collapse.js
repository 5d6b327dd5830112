// ren-inspect report: stages too large to draw, collapsed (ren.viz.groups).  A collapsed stage
// shows one box per group (the CKKS operation that built its nodes, or a block of nodes); a
// click opens a group: its sub-groups and its own nodes, laid out here (layers by longest path,
// each layer ordered by its sources' positions), so only what is shown is ever laid out.  The
// breadcrumb leads back up.  The search box finds nodes (%12, an op) and groups in the stage on
// view, collapsed or drawn, and a click on a result opens its group and selects it.
(function () {
  "use strict";
  var R = window.renReport;
  var el = document.getElementById("collapse");
  var view = el ? JSON.parse(el.textContent || "{}") : {};
  var groups = view.groups || [], rowsOf = view.stages || {}, colours = view.colours || {};
  var SVGNS = "http://www.w3.org/2000/svg";
  var STATUS = { k: "kept", c: "rebuilt", w: "rewritten", a: "added" };
  var MAX_ITEMS = 600, GAP = 14, LAYER = 74;
  var chains = [];  // group -> [top-level ancestor, …, group]
  groups.forEach(function (g, i) {
    var c = [], j = i;
    while (j >= 0) { c.push(j); j = groups[j].parent; }
    chains.push(c.reverse());
  });
  var opened = {};  // stage prefix -> the group on view (-1: the top level)

  function chain(g) { return g >= 0 ? chains[g] : []; }
  // what stands for a node while group `open` is on view: "n<k>", "g<child>" or null (outside)
  function itemOf(row, open) {
    var g = row[3];
    if (g === open) { return "n" + row[0]; }
    var c = chain(g);
    if (open < 0) { return c.length ? "g" + c[0] : "n" + row[0]; }
    var at = c.indexOf(open);
    return at < 0 ? null : "g" + c[at + 1];
  }
  function el_(tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag);
    Object.keys(attrs).forEach(function (a) { e.setAttribute(a, attrs[a]); });
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function groupLabel(g) {
    var t = groups[g];
    return [t.name, t.where + (t.level === null ? "" : " · L" + t.level + " · 2^" + t.scale.toFixed(1))];
  }

  // the items of group `open` of a stage, their edges, and layers.  Groups can form cycles
  // (a constant two operations share belongs to one of them), so each item is placed by the
  // median stage position of its nodes, and layers are longest paths over the edges that go
  // forward in that order (the others are drawn, not followed)
  function layout(prefix, open) {
    var rows = rowsOf[prefix], byK = {}, items = {}, order = [];
    rows.forEach(function (r) { byK[r[0]] = r; });
    rows.forEach(function (r, at) {
      var id = itemOf(r, open);
      if (id === null) { return; }
      var it = items[id];
      if (!it) {
        it = items[id] = { id: id, n: 0, changed: 0, preds: {}, order: order.length, row: r, at: [] };
        order.push(it);
      }
      it.n += 1;
      it.at.push(at);
      if (r[2] !== "k") { it.changed += 1; }
      r[4].forEach(function (s) {
        var src = byK[s], from = src ? itemOf(src, open) : null;
        if (from !== null && from !== id) { it.preds[from] = true; }
      });
    });
    var shown = order.slice(0, MAX_ITEMS), drawn = {};
    shown.forEach(function (it) {
      drawn[it.id] = it; it.layer = 0; it.median = it.at[it.at.length >> 1];
    });
    var placed = shown.slice().sort(function (a, b) { return a.median - b.median || a.order - b.order; });
    placed.forEach(function (it) {
      Object.keys(it.preds).forEach(function (p) {
        var u = drawn[p];
        if (u && u.median < it.median) { it.layer = Math.max(it.layer, u.layer + 1); }
      });
    });
    return { items: shown, drawn: drawn, total: order.length };
  }

  function size(it, prefix) {
    if (it.id[0] === "g") {
      var lab = groupLabel(Number(it.id.slice(1)));
      it.lines = [lab[0] + " · " + it.n + " node" + (it.n === 1 ? "" : "s"), lab[1]];
    } else {
      var info = R.data[prefix + it.id] || {};
      it.lines = [info.node + " " + info.op];
      if (info.ciphertext) { it.lines.push(info.ciphertext.replace(/^part \d+ of [^:]+: /, "")); }
    }
    it.w = Math.max(56, 7 * Math.max.apply(null, it.lines.map(function (l) { return l.length; })) + 16);
    it.h = 16 + 14 * it.lines.length;
  }

  function draw(article, open) {
    var box = article.querySelector(".graph.collapsed");
    if (!box) { return; }
    var prefix = box.getAttribute("data-stage");
    open = open === undefined ? (opened[prefix] === undefined ? -1 : opened[prefix]) : open;
    opened[prefix] = open;
    var lay = layout(prefix, open), layers = [];
    lay.items.forEach(function (it) {
      size(it, prefix);
      (layers[it.layer] = layers[it.layer] || []).push(it);
    });
    var width = 0;
    layers.forEach(function (layer, li) {
      if (!layer) { return; }
      layer.forEach(function (it) {  // barycentre of the sources drawn above
        var xs = Object.keys(it.preds).map(function (p) { return lay.drawn[p]; })
          .filter(function (p) { return p && p.x !== undefined; }).map(function (p) { return p.x + p.w / 2; });
        it.key = xs.length ? xs.reduce(function (a, b) { return a + b; }, 0) / xs.length : it.order * 1e-3;
      });
      layer.sort(function (a, b) { return a.key - b.key || a.order - b.order; });
      var x = GAP;
      layer.forEach(function (it) { it.x = x; it.y = GAP + li * LAYER; x += it.w + GAP; });
      width = Math.max(width, x);
    });
    var height = GAP + layers.length * LAYER;
    // Graphviz sizes its SVGs in points and the zoom reads width/height so: the same here
    var svg = el_("svg", { width: width * 0.75, height: height * 0.75, viewBox: "0 0 " + width + " " + height,
                           "class": "collapsed-graph" });
    var edges = el_("g", { "class": "edges" });
    svg.appendChild(edges);
    lay.items.forEach(function (it) {
      Object.keys(it.preds).forEach(function (p) {
        var s = lay.drawn[p];
        if (!s) { return; }
        edges.appendChild(el_("line", { x1: s.x + s.w / 2, y1: s.y + s.h, x2: it.x + it.w / 2, y2: it.y,
                                        "class": "edge" }));
      });
    });
    lay.items.forEach(function (it) {
      var g;
      if (it.id[0] === "g") {
        g = el_("g", { "class": "group" + (it.changed ? " changed" : ""), "data-group": it.id.slice(1) });
        g.appendChild(el_("title", {}, it.lines.join("\n") + (it.changed ? "\n" + it.changed + " node(s) changed by this pass" : "")));
        g.appendChild(el_("rect", { x: it.x, y: it.y, width: it.w, height: it.h, rx: 4 }));
      } else {
        var info = R.data[prefix + it.id] || {};
        g = el_("g", { id: prefix + it.id, "class": "node " + STATUS[it.row[2]] });
        g.appendChild(el_("title", {}, (info.node || "") + " " + (info.op || "") + " (" + STATUS[it.row[2]] + ")"));
        g.appendChild(el_("rect", { x: it.x, y: it.y, width: it.w, height: it.h, rx: 6,
                                    fill: colours[info.family] || "#fff" }));
      }
      it.lines.forEach(function (line, i) {
        g.appendChild(el_("text", { x: it.x + it.w / 2, y: it.y + 19 + 14 * i, "text-anchor": "middle" }, line));
      });
      svg.appendChild(g);
    });
    box.textContent = "";
    box.appendChild(svg);
    crumbs(article, prefix, open, lay);
    if (R.paintBits) { R.paintBits(box); }
    R.applyZoom();
  }

  function crumbs(article, prefix, open, lay) {
    var nav = article.querySelector("nav.crumbs");
    if (!nav) { return; }
    nav.textContent = "";
    var path = [-1].concat(chain(open));
    path.forEach(function (g, i) {
      if (i) { nav.appendChild(document.createTextNode(" › ")); }
      var b = document.createElement("button");
      b.type = "button"; b.className = "crumb"; b.setAttribute("data-group", g);
      b.textContent = g < 0 ? "all" : groups[g].name;
      if (g === open) { b.setAttribute("aria-current", "true"); }
      nav.appendChild(b);
    });
    var note = document.createElement("span");
    note.className = "crumb-note";
    note.textContent = " — " + lay.total + " item(s)" + (lay.total > lay.items.length
      ? ", the first " + lay.items.length + " drawn (open a sub-group, or search)" : "");
    nav.appendChild(note);
  }

  document.addEventListener("click", function (e) {
    var t = e.target.closest ? e.target.closest("g.group, button.crumb") : null;
    if (!t) { return; }
    var article = t.closest("article.stage");
    if (article) { draw(article, Number(t.getAttribute("data-group"))); R.reveal(article); }
  });
  R.onShow.push(function (article) {
    var box = article.querySelector(".graph.collapsed");
    if (box && !box.firstChild) { draw(article); }
  });
  if (R.current()) { R.onShow[R.onShow.length - 1](R.current()); }

  // -- search -------------------------------------------------------------------------------
  var input = document.getElementById("node-search");
  if (!input) { return; }
  var list = document.querySelector(".search-results"), count = document.querySelector(".search-count");
  var MAX_RESULTS = 50;

  function matches(q, k, op) {
    var m = /^%?(\d+)$/.exec(q);
    return m ? Number(m[1]) === k : op.toLowerCase() === q.toLowerCase();
  }
  function search(q) {
    var article = R.current(), out = [];
    q = q.trim();
    if (!q || !article) { return out; }
    var box = article.querySelector(".graph.collapsed"), low = q.toLowerCase();
    if (box) {
      var prefix = box.getAttribute("data-stage");
      rowsOf[prefix].forEach(function (r) {
        if (matches(q, r[0], r[1])) {
          out.push({ text: "%" + r[0] + " " + r[1] + (r[3] >= 0 ? " — " + chain(r[3]).map(function (g) { return groups[g].name; }).join(" › ") : ""),
                     go: function () { draw(article, r[3]); select(prefix + "n" + r[0]); } });
        }
      });
      groups.forEach(function (g, i) {
        if (g.name.toLowerCase().indexOf(low) >= 0 || g.where.toLowerCase().indexOf(low) >= 0) {
          out.push({ text: "group " + g.name + " (" + g.where + ")",
                     go: function () { draw(article, i); R.reveal(article); } });
        }
      });
    } else {
      article.querySelectorAll("g.node").forEach(function (g) {
        var info = R.data[g.id], m = /[nr](\d+)$/.exec(g.id);
        if (info && m && matches(q, Number(m[1]), info.op)) {
          out.push({ text: info.node + " " + info.op + (info.status === "removed" ? " (removed)" : ""),
                     go: function () { select(g.id); } });
        }
      });
    }
    return out;
  }
  function select(id) {
    var g = document.getElementById(id);
    if (!g) { return; }
    document.querySelectorAll("g.node.found").forEach(function (n) { n.classList.remove("found"); });
    g.classList.add("found");
    R.describe(g, true);
    var box = g.closest(".graph"), a = g.getBoundingClientRect(), b = box.getBoundingClientRect();
    box.scrollLeft += a.left - b.left - box.clientWidth / 2 + a.width / 2;
    box.scrollTop += a.top - b.top - box.clientHeight / 2 + a.height / 2;
  }
  function run() {
    var found = search(input.value);
    list.textContent = "";
    count.textContent = input.value.trim() ? found.length + " found" + (found.length > MAX_RESULTS ? ", the first " + MAX_RESULTS + " listed" : "") : "";
    found.slice(0, MAX_RESULTS).forEach(function (f) {
      var li = document.createElement("li"), b = document.createElement("button");
      b.type = "button"; b.textContent = f.text;
      b.addEventListener("click", f.go);
      li.appendChild(b); list.appendChild(li);
    });
  }
  input.addEventListener("input", run);
  R.onShow.push(function () { if (input.value) { run(); } });
})();
