// ren-inspect report: stage stepping (buttons, ←/→, Home/End: whatever control has the focus,
// except a text box) that zooms and scrolls the change into view; a node panel that follows the
// selected node through the stages (hover previews another, Esc or a click on empty space lets
// go); rule highlighting; hiding removed nodes; a before | after view of one pass whose panes
// line up and scroll together; zoom (fit: the whole graph); colouring ciphertexts by precision
// against what their parameters attain.  What collapse.js and links.js need is on
// window.renReport.
(function () {
  "use strict";
  // node details travel packed (ren.viz.report.compact): each field's values once, each
  // distinct details dict once as a row of value indices, and node id -> row
  var packed = JSON.parse(document.getElementById("node-data").textContent || "{}");
  var fields = packed.fields || [], values = packed.values || [], data = {};
  var rows = (packed.rows || []).map(function (row) {
    var info = {};
    row.forEach(function (v, f) { if (v >= 0) { info[fields[f]] = values[f][v]; } });
    return info;
  });
  Object.keys(packed.ids || {}).forEach(function (id) { data[id] = rows[packed.ids[id]]; });
  var R = window.renReport = { data: data, onShow: [], onMark: [] };
  var stages = Array.prototype.slice.call(document.querySelectorAll("article.stage"));
  var buttons = Array.prototype.slice.call(document.querySelectorAll(".stage-button"));
  var bar = document.querySelector(".stage-bar");
  var current = 0;
  var details = document.getElementById("details");
  var FIELDS = ["node", "op", "family", "dtype", "arg", "ring", "domain", "device", "sources", "status",
                "rule", "replaces", "replaced by", "group", "ciphertext", "body"];
  var OPTIONAL = { "replaced by": 1, body: 1, group: 1, ciphertext: 1 };
  var container = document.querySelector(".stages");
  var compare = document.getElementById("compare");
  var hideRemoved = document.getElementById("hide-removed");
  var NODE_ID = /^s(\d+)([nr])(\d+(?:_\d+)?)$/;  // s<stage>n<k> (r<k>: a removed ghost)

  function pad(i) { return i < 10 ? "0" + i : String(i); }
  function prefix(i) { return "s" + pad(i); }
  function indexOf(article) { return Number(article.getAttribute("data-index")); }
  function shown() { return stages.filter(function (s) { return !s.hidden; }); }
  function graphOf(article) { return article ? article.querySelector("div.graph") : null; }
  function keyOf(id) { var m = NODE_ID.exec(id || ""); return m ? m[3] : null; }
  function stageOfId(id) { var m = NODE_ID.exec(id || ""); return m ? Number(m[1]) : -1; }
  function visible(el) { var r = el.getBoundingClientRect(); return r.width > 0 || r.height > 0; }

  // -- the sticky bars (sections; stages and zoom): their heights feed the CSS --------------
  var root = document.documentElement;
  function measureSticky() {
    var toc = document.querySelector("nav.toc"), nav = document.querySelector(".stage-nav");
    var th = toc ? toc.offsetHeight : 0, nh = nav ? nav.offsetHeight : 0;
    root.style.setProperty("--toc-h", th + "px");
    root.style.setProperty("--sticky-h", (th + nh) + "px");
  }
  function stickyH() { return parseFloat(root.style.getPropertyValue("--sticky-h")) || 0; }
  // the graph box in the window, below the sticky bars; then `el` (if given) inside the window
  function pageTo(graph, el) {
    var top = stickyH() + 4, r = graph.getBoundingClientRect(), room = window.innerHeight - top;
    if (r.top < top || r.bottom > window.innerHeight) {
      window.scrollBy(0, r.height > room || r.top < top ? r.top - top : r.bottom - window.innerHeight + 4);
    }
    if (el) {
      var q = el.getBoundingClientRect();
      if (q.top < top || q.bottom > window.innerHeight) {
        window.scrollBy(0, q.top - top - (room - q.height) / 2);
      }
    }
  }

  function show(i) {
    if (!stages.length) { return; }
    i = Math.max(0, Math.min(stages.length - 1, i));
    var side = compare && compare.checked && i > 0;
    stages.forEach(function (s, k) {
      s.hidden = !(k === i || (side && k === i - 1));
      s.classList.toggle("before", side && k === i - 1);
    });
    if (container) { container.classList.toggle("compare", !!side); }
    buttons.forEach(function (b, k) { b.setAttribute("aria-selected", k === i ? "true" : "false"); });
    current = i;
    selStage = i;
    document.body.setAttribute("data-stage", stages[i].getAttribute("data-name"));
    keepInBar(buttons[i]);
    shown().forEach(function (a) { R.onShow.forEach(function (f) { f(a, a === stages[i]); }); });
    if (!fit) { scale = userScale; }
    applyZoom();
    shown().forEach(markRule);
    markSelection();
    panel();
    align();
  }
  // the active stage's button stays in view in the (horizontally scrolled) stage bar
  function keepInBar(b) {
    if (!bar || !b) { return; }
    var br = bar.getBoundingClientRect(), r = b.getBoundingClientRect();
    if (r.left < br.left) { bar.scrollLeft += r.left - br.left - 24; }
    else if (r.right > br.right) { bar.scrollLeft += r.right - br.right + 24; }
  }

  // -- the node panel: the selected node on the panel's stage, or the hovered one ----------
  var sel = null;      // the selected node's lasting number ("4"; "45_3" inside a kernel body)
  var selStage = 0;    // the stage whose version of it the panel shows (the pane clicked)
  var hover = null;    // the id of the node under the mouse
  var lastMouse = null, still = null;  // after a step, hovering waits for the mouse to move
  var DEFAULT_HINT = details ? details.querySelector(".hint").textContent : "";

  function title(i) { return stages[i] ? stages[i].getAttribute("data-name").replace(/^\d+_/, "") : String(i); }
  // where node `key` is on stage i: {id} there (a ghost's details say "removed"), else the
  // stage that removed it ({id: its last details, gone}) or where it first appears ({later})
  function locate(key, i) {
    var p = prefix(i), j;
    if (data[p + "n" + key]) { return { id: p + "n" + key }; }
    if (data[p + "r" + key]) { return { id: p + "r" + key }; }
    for (j = i - 1; j >= 0; j--) {
      if (data[prefix(j) + "n" + key]) { return { id: prefix(j) + "n" + key, gone: j + 1 }; }
    }
    for (j = i + 1; j < stages.length; j++) {
      if (data[prefix(j) + "n" + key]) { return { id: prefix(j) + "n" + key, later: j }; }
    }
    return null;
  }
  function fill(info) {
    var dl = details.querySelector("dl");
    dl.textContent = "";
    if (!info) { return; }
    FIELDS.forEach(function (f) {
      if (info[f] === undefined && OPTIONAL[f]) { return; }
      var dt = document.createElement("dt"), dd = document.createElement("dd");
      dt.textContent = f; dd.textContent = info[f] === undefined ? "" : String(info[f]);
      dd.className = "f-" + f.replace(/ /g, "-");
      dl.appendChild(dt); dl.appendChild(dd);
    });
  }
  function panel() {
    if (!details) { return; }
    var id = null, state = "", hint = DEFAULT_HINT, info = null;
    var at = sel !== null ? locate(sel, selStage) : null;
    if (hover && data[hover] && !(at && at.id === hover)) {
      id = hover; state = "hovered"; info = data[id];
      hint = "Hovered" + (sel !== null ? "; the selected node comes back when the mouse leaves."
                                       : ": click it to follow it through the stages.");
    } else if (at) {
      id = at.id; info = data[id];
      var what = (info.node || "%" + sel) + " " + (info.op || "");
      if (at.gone !== undefined) {
        state = "absent";
        hint = what + " is not on stage " + selStage + ": pass " + at.gone + ", " + title(at.gone) +
          ", removed it. As it was on stage " + (at.gone - 1) + ":";
        info = Object.assign({}, info, { status: "removed by pass " + at.gone + " (" + title(at.gone) + ")" });
      } else if (at.later !== undefined) {
        state = "absent";
        hint = what + " is not on stage " + selStage + " yet: pass " + at.later + ", " + title(at.later) +
          ", adds it. As it is there:";
      } else {
        state = "selected";
        hint = "Selected; it follows you through the stages (Esc or a click on empty space lets go).";
      }
    }
    fill(info);
    details.querySelector(".hint").textContent = hint;
    details.setAttribute("data-node", id || "");
    details.setAttribute("data-state", state);
  }
  function markSelection() {
    document.querySelectorAll("g.node.selected, g.node.twin").forEach(function (n) {
      n.classList.remove("selected"); n.classList.remove("twin");
    });
    if (sel === null) { return; }
    shown().forEach(function (a) {
      var i = indexOf(a), g = document.getElementById(prefix(i) + "n" + sel) ||
        document.getElementById(prefix(i) + "r" + sel);
      if (g) { g.classList.add(i === selStage ? "selected" : "twin"); }
    });
  }
  // select a node by its id (the panel shows it; in before | after its twin is brought into
  // the other pane's view)
  function select(id) {
    var k = keyOf(id);
    if (k === null || !data[id]) { return; }
    sel = k; selStage = stageOfId(id); hover = null;
    markSelection();
    panel();
    var panes = shown();
    if (panes.length === 2) {
      var g = document.getElementById(id), pane = g && g.closest("article.stage");
      panes.forEach(function (a) {
        if (a === pane) { return; }
        var i = indexOf(a), twin = document.getElementById(prefix(i) + "n" + k) ||
          document.getElementById(prefix(i) + "r" + k);
        if (twin && visible(twin)) { centerOn(twin, false); }
      });
    }
  }
  function release() {
    sel = null; hover = null;
    document.querySelectorAll("g.node.found").forEach(function (n) { n.classList.remove("found"); });
    markSelection();
    panel();
  }

  // a rule's button highlights the nodes of its stage that the rule produced (in a collapsed
  // stage, collapse.js marks the groups that hold them: R.onMark)
  function markRule(article) {
    var pressed = article.querySelector("button.rule[aria-pressed='true']");
    var rule = pressed ? pressed.getAttribute("data-rule") : null, graph = graphOf(article);
    article.querySelectorAll(".graph .hl").forEach(function (n) { n.classList.remove("hl"); });
    if (graph) { graph.classList.toggle("highlighting", !!rule); }
    if (!rule) { return; }
    article.querySelectorAll("g.node").forEach(function (n) {
      var info = data[n.id];
      if (info && info.rule === rule && info.status !== "removed") { n.classList.add("hl"); }
    });
    R.onMark.forEach(function (f) { f(article, rule); });
  }
  function highlight(button) {
    var article = button.closest("article.stage");
    var on = button.getAttribute("aria-pressed") !== "true";
    article.querySelectorAll("button.rule").forEach(function (b) { b.setAttribute("aria-pressed", "false"); });
    if (on) { button.setAttribute("aria-pressed", "true"); }
    markRule(article);
    if (on) { bringIntoView(article, Array.prototype.slice.call(article.querySelectorAll(".graph .hl")), false); }
  }
  document.querySelectorAll("button.rule").forEach(function (b) {
    b.addEventListener("click", function () { highlight(b); });
  });
  if (hideRemoved) {
    hideRemoved.addEventListener("change", function () {
      document.body.classList.toggle("hide-removed", hideRemoved.checked);
      updateOutside();
    });
  }
  if (compare) { compare.addEventListener("change", function () { show(current); reveal(stages[current]); }); }

  // -- zoom: one scale for every stage graph, from its own size; "fit" fits each whole graph
  // in its box.  Stepping may zoom out (not below MIN_READ) so that the change fits.
  var userScale = 1, scale = 1, fit = false, fitted = null;
  var MIN_READ = 0.6;  // Graphviz's 9 pt labels stay about 7 px high
  var level = document.querySelector(".zoom-level");
  function natural(svg) {  // Graphviz sizes its SVGs in points: 1 pt = 96/72 px at 100%
    return [parseFloat(svg.getAttribute("width")) * 4 / 3, parseFloat(svg.getAttribute("height")) * 4 / 3];
  }
  function maxHeight(box) {
    return parseFloat(window.getComputedStyle(box).maxHeight) || window.innerHeight * 0.78;
  }
  function fitScale(svg, w, h) {
    var box = svg.parentNode, bw = box.clientWidth - 2;
    if (bw <= 0) { return 0; }  // hidden: fitted when shown
    return Math.min(bw / w, (maxHeight(box) - 4) / h, 2);
  }
  function applyZoom() {
    var seen = null;
    document.querySelectorAll(".stages .graph > svg").forEach(function (svg) {
      var wh = natural(svg), w = wh[0], h = wh[1];
      if (!w || !h) { return; }
      var s = scale;
      if (fit) {
        s = fitScale(svg, w, h);
        if (!s) { return; }
        if (!svg.closest("article.stage").hidden) { seen = seen === null ? s : Math.min(seen, s); }
      }
      svg.style.width = (w * s) + "px"; svg.style.height = (h * s) + "px";
    });
    if (fit && seen !== null) { fitted = seen; }
    if (level) {
      level.textContent = !fit ? Math.round(scale * 100) + "%"
        : "fit" + (seen !== null ? " (" + Math.round(seen * 100) + "%)" : "");
    }
    updateOutside();
  }
  function zoom(how) {
    var keep = shown().map(function (a) { return anchor(graphOf(a)); });
    if (how === "fit") {
      fit = !fit;
      if (!fit) { scale = userScale; }
    } else {  // from the level on view: after "fit", its scale
      var base = fit && fitted ? fitted : scale;
      fit = false;
      scale = userScale = Math.max(0.05, Math.min(4, how === "in" ? base * 1.25 : base / 1.25));
    }
    applyZoom();
    keep.forEach(function (k) { if (k) { k(); } });
  }
  // the centre of a graph box as a fraction of its content: kept across a zoom
  function anchor(graph) {
    if (!graph || !graph.scrollWidth) { return null; }
    var fx = (graph.scrollLeft + graph.clientWidth / 2) / graph.scrollWidth;
    var fy = (graph.scrollTop + graph.clientHeight / 2) / graph.scrollHeight;
    return function () {
      graph.scrollLeft = fx * graph.scrollWidth - graph.clientWidth / 2;
      graph.scrollTop = fy * graph.scrollHeight - graph.clientHeight / 2;
    };
  }
  document.querySelectorAll("[data-zoom]").forEach(function (b) {
    b.addEventListener("click", function () { zoom(b.getAttribute("data-zoom")); });
  });

  // -- the change in view ------------------------------------------------------------------
  var CHANGED = "g.node.added, g.node.rewritten, g.node.rebuilt, g.node.removed, g.group.changed";
  function changed(article) {
    return Array.prototype.slice.call(article.querySelectorAll(CHANGED)).filter(visible);
  }
  // rectangles of `els` in the graph box's content coordinates (at the current zoom)
  function boxes(graph, els) {
    var b = graph.getBoundingClientRect(), x = graph.scrollLeft - b.left - graph.clientLeft;
    var y = graph.scrollTop - b.top - graph.clientTop;
    return els.map(function (e) {
      var q = e.getBoundingClientRect();
      return { l: q.left + x, t: q.top + y, r: q.right + x, b: q.bottom + y };
    });
  }
  function hull(rs) {
    var h = { l: Infinity, t: Infinity, r: -Infinity, b: -Infinity };
    rs.forEach(function (q) {
      h.l = Math.min(h.l, q.l); h.t = Math.min(h.t, q.t); h.r = Math.max(h.r, q.r); h.b = Math.max(h.b, q.b);
    });
    return h;
  }
  // the window (w × h) holding the most of `rs`: left edges from the rectangles', then the
  // best top edge by a sweep over the rectangles between those sides
  function bestWindow(rs, w, h) {
    var best = { n: -1, x: 0, y: 0 };
    rs.slice(0, 1500).forEach(function (c) {
      var x0 = c.l - 12;
      var col = rs.filter(function (q) { return q.l >= x0 && q.r <= x0 + w; })
        .sort(function (a, b) { return a.t - b.t; });
      col.forEach(function (q, i) {
        var y0 = q.t - 12, n = 0;
        for (var j = i; j < col.length && col[j].t <= y0 + h; j++) { if (col[j].b <= y0 + h) { n += 1; } }
        if (n > best.n) { best = { n: n, x: x0, y: y0 }; }
      });
    });
    return best;
  }
  // zoom (when `fitIt`: down to MIN_READ, never above the reader's own scale) and scroll the
  // graph box so that `els` are in view, the most of them when they cannot all be
  function bringIntoView(article, els, fitIt) {
    var graph = graphOf(article), svg = graph && graph.querySelector("svg");
    if (!svg || !els.length) { updateOutside(); return; }
    var bw = graph.clientWidth - 24, bh = Math.min(maxHeight(graph), window.innerHeight - stickyH() - 8) - 28;
    if (fitIt && !fit) {
      var s0 = svg.getBoundingClientRect().width / natural(svg)[0] || scale, h = hull(boxes(graph, els));
      var want = Math.min(userScale, bw / ((h.r - h.l) / s0), bh / ((h.b - h.t) / s0));
      want = Math.max(want, Math.min(MIN_READ, userScale));
      if (Math.abs(want - scale) > 0.005) { scale = want; applyZoom(); }
    }
    var rs = boxes(graph, els), all = hull(rs);
    var cw = graph.clientWidth, ch = graph.clientHeight;
    if (all.r - all.l <= cw && all.b - all.t <= ch) {
      graph.scrollLeft = (all.l + all.r - cw) / 2;
      graph.scrollTop = (all.t + all.b - ch) / 2;
    } else {
      var win = bestWindow(rs, cw, ch);
      var inside = rs.filter(function (q) {
        return q.l >= win.x && q.r <= win.x + cw && q.t >= win.y && q.b <= win.y + ch;
      });
      var c = inside.length ? hull(inside) : all;  // centre what the window holds
      graph.scrollLeft = (c.l + c.r - cw) / 2;
      graph.scrollTop = (c.t + c.b - ch) / 2;
    }
    pageTo(graph);
    updateOutside();
  }
  function reveal(article) { if (article) { bringIntoView(article, changed(article), true); } }
  // the hint in the zoom bar: how many changed nodes of the stage on view are out of sight
  var hintEl = document.querySelector(".outside-hint");
  function updateOutside() {
    if (!hintEl) { return; }
    var article = stages[current], graph = graphOf(article), n = 0, items = "nodes";
    if (graph && !article.hidden) {
      var nav = document.querySelector(".stage-nav"), b = graph.getBoundingClientRect();
      var top = Math.max(b.top, nav ? nav.getBoundingClientRect().bottom : 0);
      var bottom = Math.min(b.bottom, window.innerHeight);
      var left = Math.max(b.left, 0), right = Math.min(b.right, window.innerWidth);
      if (graph.classList.contains("collapsed")) { items = "boxes"; }
      changed(article).forEach(function (e) {
        var q = e.getBoundingClientRect();
        if (q.left < left - 1 || q.right > right + 1 || q.top < top - 1 || q.bottom > bottom + 1) { n += 1; }
      });
    }
    hintEl.textContent = n ? n + " changed " + (n === 1 ? items.slice(0, -1) : items) + " outside the view" : "";
    hintEl.setAttribute("data-count", String(n));
    hintEl.title = n ? "click: bring the change into view again" : "";
    keepInBar(buttons[current]);  // the hint takes room from the stage bar
  }
  if (hintEl) { hintEl.addEventListener("click", function () { reveal(stages[current]); }); }

  // a node in the middle of its graph box (and the box, and the node, in the window)
  function centerOn(el, page) {
    var graph = el.closest("div.graph");
    if (!graph) { return; }
    var a = el.getBoundingClientRect(), b = graph.getBoundingClientRect();
    graph.scrollLeft += a.left - b.left - graph.clientWidth / 2 + a.width / 2;
    graph.scrollTop += a.top - b.top - graph.clientHeight / 2 + a.height / 2;
    if (page !== false) { pageTo(graph, el); }
    updateOutside();
  }

  // -- before | after: the two graph boxes start at the same height and scroll together ----
  function align() {
    document.querySelectorAll(".pane-spacer").forEach(function (e) { e.style.height = "0"; });
    var panes = shown();
    if (panes.length !== 2) { return; }
    var a = graphOf(panes[0]), b = graphOf(panes[1]);
    if (!a || !b) { return; }
    var d = a.getBoundingClientRect().top - b.getBoundingClientRect().top;
    if (Math.abs(d) < 0.5) { return; }
    var low = d > 0 ? b : a, spacer = low.previousElementSibling;  // a spacer: no margin collapses
    if (!spacer || !spacer.classList.contains("pane-spacer")) {
      spacer = document.createElement("div");
      spacer.className = "pane-spacer";
      low.parentNode.insertBefore(spacer, low);
    }
    spacer.style.height = Math.abs(d) + "px";
  }
  // the other pane follows a scrolled one: the node nearest the scrolled box's centre that is
  // on both stages sits at the same place in both boxes
  var quietUntil = new WeakMap();
  function follow(from) {
    var panes = shown(), pane = from.closest("article.stage");
    if (panes.length !== 2 || !pane) { return; }
    var other = panes[0] === pane ? panes[1] : panes[0], to = graphOf(other);
    if (!to) { return; }
    var fb = from.getBoundingClientRect(), cx = fb.left + fb.width / 2, cy = fb.top + fb.height / 2;
    var p = prefix(indexOf(other)), best = null, bd = Infinity;
    pane.querySelectorAll("g.node").forEach(function (n) {
      var r = n.getBoundingClientRect();
      if (!r.width) { return; }
      var d = Math.pow(r.left + r.width / 2 - cx, 2) + Math.pow(r.top + r.height / 2 - cy, 2);
      if (d >= bd) { return; }
      var k = keyOf(n.id), t = k !== null ? document.getElementById(p + "n" + k) : null;
      if (t && visible(t)) { best = [r, t]; bd = d; }
    });
    if (!best) { return; }
    var tr = best[1].getBoundingClientRect(), tb = to.getBoundingClientRect();
    quietUntil.set(to, Date.now() + 200);
    to.scrollLeft += (tr.left - tb.left) - (best[0].left - fb.left);
    to.scrollTop += (tr.top - tb.top) - (best[0].top - fb.top);
  }
  var pending = null, queued = false;
  document.addEventListener("scroll", function (e) {
    var t = e.target;
    if (t && t.nodeType === 1 && t.matches("div.graph") && container && container.classList.contains("compare")
        && !((quietUntil.get(t) || 0) > Date.now())) { pending = t; }
    if (queued) { return; }
    queued = true;
    window.requestAnimationFrame(function () {
      queued = false;
      if (pending) { follow(pending); pending = null; }
      updateOutside();
    });
  }, true);
  // a <details> opened in one pane moves its graph box: line them up again
  document.addEventListener("toggle", function () { align(); updateOutside(); }, true);
  window.addEventListener("resize", function () { measureSticky(); if (fit) { applyZoom(); } align(); updateOutside(); });

  // -- stepping and keys ---------------------------------------------------------------------
  function step(i) {
    hover = null; still = lastMouse;  // what now lies under a resting mouse is no hover
    show(i);
    reveal(stages[current]);
  }
  // keys step whatever control has the focus (a checkbox, a button), except a text box
  function typing(t) {
    if (!t || !t.tagName) { return false; }
    if (t.isContentEditable || t.tagName === "TEXTAREA" || t.tagName === "SELECT") { return true; }
    return t.tagName === "INPUT" && !/^(checkbox|radio|button|submit|reset|range|color|file|image)$/i.test(t.type);
  }
  buttons.forEach(function (b, k) { b.addEventListener("click", function () { step(k); }); });
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) { return; }
    if (e.key === "Escape") { release(); return; }
    if (typing(e.target)) { return; }
    if (e.key === "ArrowRight") { step(current + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft") { step(current - 1); e.preventDefault(); }
    else if (e.key === "Home") { step(0); e.preventDefault(); }
    else if (e.key === "End") { step(stages.length - 1); e.preventDefault(); }
    else if (e.key === "+" || e.key === "=") { zoom("in"); }
    else if (e.key === "-") { zoom("out"); }
    else if (e.key === "0") { zoom("fit"); }
  });
  // a click on a node selects it; a click on empty space (not a control, the panel or a text)
  // lets go
  var KEEP = "g.group, button, input, label, a, summary, select, textarea, details, #details, .search-results, nav";
  document.addEventListener("click", function (e) {
    var t = e.target.closest ? e.target : e.target.parentElement;
    if (!t) { return; }
    var g = t.closest("g.node");
    if (g) { select(g.id); return; }
    if (!t.closest(KEEP)) { release(); }
  });
  // hovering previews a node (not what comes to lie under a resting mouse after a step)
  document.addEventListener("mousemove", function (e) {
    lastMouse = { x: e.clientX, y: e.clientY };
    if (still && (still.x !== e.clientX || still.y !== e.clientY)) { still = null; }
    if (still) { return; }
    var g = e.target.closest ? e.target.closest("g.node") : null;
    var id = g && data[g.id] ? g.id : null;
    if (id !== hover) { hover = id; panel(); }
  });

  document.addEventListener("mouseout", function (e) {  // the mouse left the window
    if (!e.relatedTarget && hover) { hover = null; panel(); }
  });

  // -- colour by precision: green keeps every bit a fresh ciphertext of these parameters
  // holds, red lost `span` bits or more
  var byBits = document.getElementById("colour-bits");
  function bitsHue(bits) {
    var top = parseFloat(byBits.getAttribute("data-top")), span = parseFloat(byBits.getAttribute("data-span")) || 20;
    return Math.round(120 * Math.max(0, Math.min(1, 1 - (top - bits) / span)));
  }
  function paintBits(within) {
    if (!byBits) { return; }
    (within || document).querySelectorAll("g.node").forEach(function (g) {
      var info = data[g.id];
      if (!info || info.bits === undefined) { return; }
      g.classList.add("has-bits");
      g.setAttribute("data-hue", String(bitsHue(info.bits)));
      g.querySelectorAll("polygon, path, rect").forEach(function (shape) {
        shape.style.fill = byBits.checked ? "hsl(" + bitsHue(info.bits) + ", 75%, 72%)" : "";
      });
    });
    document.body.classList.toggle("by-bits", byBits.checked);
  }
  if (byBits) { byBits.addEventListener("change", function () { paintBits(); }); }

  R.describe = function (g, pin) { if (pin) { select(g.id); } else { hover = g.id; panel(); } };
  R.select = select; R.release = release; R.centerOn = centerOn; R.bringIntoView = bringIntoView;
  R.applyZoom = applyZoom; R.reveal = reveal; R.paintBits = paintBits; R.markRule = markRule;
  R.markSelection = markSelection; R.align = align; R.updateOutside = updateOutside;
  R.prefix = function (article) { return prefix(indexOf(article)); };
  R.shown = shown;
  R.current = function () { return stages[current]; };
  // a reload keeps the checkboxes' states: the page follows them
  function restore() {
    if (hideRemoved) { document.body.classList.toggle("hide-removed", hideRemoved.checked); }
    if (byBits && byBits.checked) { paintBits(); }
  }
  window.addEventListener("pageshow", function (e) { if (e.persisted) { restore(); show(current); } });
  measureSticky();
  restore();
  show(0);
})();
