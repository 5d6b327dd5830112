// ren-inspect report: stages too large to draw, collapsed (ren.viz.groups).  A collapsed stage
// shows one box per group (the CKKS operation that built its nodes, or a block of nodes); a
// click opens a group: its sub-groups and its own nodes, laid out here (layers by longest path,
// each layer ordered by its sources' positions), so only what is shown is ever laid out.  The
// breadcrumb leads back up.  The group opened stays open across stages (and in both panes of
// before | after) while the stage has it, else its nearest enclosing group that it has.  A
// rule's button marks the boxes holding the rule's nodes.  The search box finds nodes (%12, an
// op) and groups (a CKKS operation: multiply, relinearize) in the stage on view, collapsed or
// drawn; a click on a result opens its group (or marks its nodes) and brings it into view.
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
  var openGroup = -1;  // the group the reader opened last (-1: the top level), for every stage
  var drawnOpen = {};  // stage prefix -> the group its view shows
  var present = {};    // stage prefix -> {group: true} for each group with nodes on that stage

  function chain(g) { return g >= 0 ? chains[g] : []; }
  function presentIn(prefix) {
    if (!present[prefix]) {
      var p = present[prefix] = {};
      (rowsOf[prefix] || []).forEach(function (r) { chain(r[3]).forEach(function (g) { p[g] = true; }); });
    }
    return present[prefix];
  }
  // the deepest group of `g`'s path that the stage has (-1: none, the top level)
  function resolve(prefix, g) {
    var c = chain(g), p = presentIn(prefix);
    for (var i = c.length - 1; i >= 0; i--) { if (p[c[i]]) { return c[i]; } }
    return -1;
  }
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

  // draw the stage with group `open` on view (undefined: the one the reader opened last, or
  // the nearest enclosing group this stage has); an explicit `open` becomes the reader's and
  // the other pane of before | after follows it
  function draw(article, open) {
    var box = article.querySelector(".graph.collapsed");
    if (!box) { return; }
    var prefix = box.getAttribute("data-stage");
    if (open !== undefined) { openGroup = open; }
    open = resolve(prefix, openGroup);
    drawnOpen[prefix] = open;
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
    R.paintBits(box);
    R.applyZoom();
    R.markRule(article);
    R.markSelection();
    R.align();
  }
  // a collapsed pane shows the reader's open group (as far as its stage has it)
  function sync(article) {
    var box = article.querySelector(".graph.collapsed");
    if (!box) { return; }
    var prefix = box.getAttribute("data-stage");
    if (!box.firstChild || drawnOpen[prefix] !== resolve(prefix, openGroup)) { draw(article); }
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

  function enter(article, g) {
    draw(article, g);
    R.shown().forEach(function (a) { if (a !== article) { sync(a); } });
    R.reveal(article);
  }
  document.addEventListener("click", function (e) {
    var t = e.target.closest ? e.target.closest("g.group, button.crumb") : null;
    if (!t) { return; }
    var article = t.closest("article.stage");
    if (article) { enter(article, Number(t.getAttribute("data-group"))); }
  });
  R.onShow.push(sync);
  R.shown().forEach(sync);

  // a rule's button: the boxes that hold nodes the rule produced (report.js marks the nodes)
  R.onMark.push(function (article, rule) {
    var box = article.querySelector(".graph.collapsed");
    if (!box) { return; }
    var prefix = box.getAttribute("data-stage"), has = {};
    rowsOf[prefix].forEach(function (r) {
      var info = R.data[prefix + "n" + r[0]];
      if (info && info.rule === rule) { chain(r[3]).forEach(function (g) { has[g] = true; }); }
    });
    box.querySelectorAll("g.group").forEach(function (g) {
      if (has[g.getAttribute("data-group")]) { g.classList.add("hl"); }
    });
  });

  // -- search -------------------------------------------------------------------------------
  var input = document.getElementById("node-search");
  if (!input) { return; }
  var list = document.querySelector(".search-results"), count = document.querySelector(".search-count");
  var MAX_RESULTS = 50;

  function matches(q, k, op) {
    var m = /^%?(\d+)$/.exec(q);
    return m ? Number(m[1]) === k : op.toLowerCase() === q.toLowerCase();
  }
  function groupText(i) { return chain(i).map(function (g) { return groups[g].name; }).join(" › "); }
  function groupMatches(g, low) {
    return g.name.toLowerCase().indexOf(low) >= 0 || g.where.toLowerCase().indexOf(low) >= 0;
  }
  function search(q) {
    var article = R.current(), out = [];
    q = q.trim();
    if (!q || !article) { return out; }
    var box = article.querySelector(".graph.collapsed"), low = q.toLowerCase();
    var prefix = R.prefix(article);
    if (box) {
      rowsOf[prefix].forEach(function (r) {
        if (matches(q, r[0], r[1])) {
          out.push({ text: "%" + r[0] + " " + r[1] + (r[3] >= 0 ? " — " + groupText(r[3]) : ""),
                     go: function () { enter(article, r[3]); select(prefix + "n" + r[0]); } });
        }
      });
      var here = presentIn(prefix);
      groups.forEach(function (g, i) {
        if (here[i] && groupMatches(g, low)) {
          out.push({ text: "group " + groupText(i) + " (" + g.where + ")", go: function () { enter(article, i); } });
        }
      });
    } else {
      var members = {};  // group -> its drawn nodes (its sub-groups' too)
      article.querySelectorAll("g.node").forEach(function (g) {
        var info = R.data[g.id], m = /[nr](\d+)$/.exec(g.id);
        if (!info || !m) { return; }
        if (matches(q, Number(m[1]), info.op)) {
          out.push({ text: info.node + " " + info.op + (info.status === "removed" ? " (removed)" : ""),
                     go: function () { select(g.id); } });
        }
        if (info.gid !== undefined && info.status !== "removed") {
          chain(info.gid).forEach(function (k) { (members[k] = members[k] || []).push(g); });
        }
      });
      groups.forEach(function (g, i) {
        var nodes = members[i];
        if (nodes && groupMatches(g, low)) {
          out.push({ text: "group " + groupText(i) + " (" + g.where + ") — " + nodes.length + " node" +
                           (nodes.length === 1 ? "" : "s"),
                     go: function () { mark(article, nodes); } });
        }
      });
    }
    return out;
  }
  function unmark() {
    document.querySelectorAll("g.node.found").forEach(function (n) { n.classList.remove("found"); });
  }
  // a group's nodes in a drawn stage: marked, and brought into view
  function mark(article, nodes) {
    unmark();
    nodes.forEach(function (n) { n.classList.add("found"); });
    R.bringIntoView(article, nodes, false);
  }
  function select(id) {
    var g = document.getElementById(id);
    if (!g) { return; }
    unmark();
    g.classList.add("found");
    R.select(id);
    R.centerOn(g);
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
  input.addEventListener("keydown", function (e) {  // Enter: the first result
    var first = list.querySelector("button");
    if (e.key === "Enter" && first) { first.click(); e.preventDefault(); }
  });
  R.onShow.push(function (article, isCurrent) { if (isCurrent && input.value) { run(); } });
})();
