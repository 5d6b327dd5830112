// ren-inspect report: stage stepping (buttons, ←/→, Home/End) that scrolls the change into view,
// node details on click/hover, rule highlighting, hiding removed nodes, a before | after view of
// one pass, zoom (fit: the whole graph) and colouring ciphertexts by precision.  What the other
// scripts (collapse.js, links.js) need is on window.renReport.
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
  var R = window.renReport = { data: data, onShow: [] };
  var stages = Array.prototype.slice.call(document.querySelectorAll("article.stage"));
  var buttons = Array.prototype.slice.call(document.querySelectorAll(".stage-button"));
  var current = 0;
  var details = document.getElementById("details");
  var FIELDS = ["node", "op", "family", "dtype", "arg", "ring", "domain", "device", "sources", "status",
                "rule", "replaces", "replaced by", "group", "ciphertext", "body"];
  var OPTIONAL = { "replaced by": 1, body: 1, group: 1, ciphertext: 1 };
  var container = document.querySelector(".stages");
  var compare = document.getElementById("compare");
  var hideRemoved = document.getElementById("hide-removed");

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
    document.body.setAttribute("data-stage", stages[i].getAttribute("data-name"));
    R.onShow.forEach(function (f) { f(stages[i]); });
    if (fit) { applyZoom(); }
  }

  function describe(g, pin) {
    var info = data[g.id];
    if (!info || !details) { return; }
    var dl = details.querySelector("dl");
    dl.textContent = "";
    FIELDS.forEach(function (f) {
      if (info[f] === undefined && OPTIONAL[f]) { return; }
      var dt = document.createElement("dt"), dd = document.createElement("dd");
      dt.textContent = f; dd.textContent = info[f] === undefined ? "" : String(info[f]);
      dd.className = "f-" + f.replace(/ /g, "-");
      dl.appendChild(dt); dl.appendChild(dd);
    });
    details.querySelector(".hint").textContent = pin ? "Selected (click another node to change)." : "Hovered.";
    if (pin) {
      document.querySelectorAll("g.node.selected").forEach(function (n) { n.classList.remove("selected"); });
      g.classList.add("selected");
      details.setAttribute("data-node", g.id);
      markTwins(g.id);
    }
  }

  // the same node (the same lasting number) in the other pane of the before | after view
  function markTwins(id) {
    document.querySelectorAll("g.node.twin").forEach(function (n) { n.classList.remove("twin"); });
    var m = /^s\d+[nr](\d+)$/.exec(id);
    if (!m) { return; }
    stages.forEach(function (s) {
      if (s.hidden) { return; }
      s.querySelectorAll("g.node").forEach(function (n) {
        var k = /^s\d+[nr](\d+)$/.exec(n.id);
        if (k && k[1] === m[1] && n.id !== id) { n.classList.add("twin"); }
      });
    });
  }

  // a rule's button highlights the nodes of its stage that the rule produced
  function highlight(button) {
    var article = button.closest("article.stage");
    var on = button.getAttribute("aria-pressed") !== "true";
    article.querySelectorAll("button.rule").forEach(function (b) { b.setAttribute("aria-pressed", "false"); });
    var graph = article.querySelector(".graph");
    article.querySelectorAll("g.node.hl").forEach(function (n) { n.classList.remove("hl"); });
    if (graph) { graph.classList.toggle("highlighting", on); }
    if (!on) { return; }
    button.setAttribute("aria-pressed", "true");
    var rule = button.getAttribute("data-rule");
    article.querySelectorAll("g.node").forEach(function (n) {
      var info = data[n.id];
      if (info && info.rule === rule && info.status !== "removed") { n.classList.add("hl"); }
    });
  }
  document.querySelectorAll("button.rule").forEach(function (b) {
    b.addEventListener("click", function () { highlight(b); });
  });
  if (hideRemoved) {
    hideRemoved.addEventListener("change", function () {
      document.body.classList.toggle("hide-removed", hideRemoved.checked);
    });
  }
  if (compare) { compare.addEventListener("change", function () { show(current); }); }

  // zoom: scale every stage graph from its own size (viewBox); "fit" fits the whole graph in its
  // box (width and height), recomputed for each stage as it is shown
  var scale = 1, fit = false;
  var level = document.querySelector(".zoom-level");
  function fitScale(svg, w, h) {
    var box = svg.parentNode;
    var bw = box.clientWidth - 2;
    var bh = parseFloat(window.getComputedStyle(box).maxHeight) || window.innerHeight * 0.78;
    if (bw <= 0) { return 0; }  // hidden: fitted when shown
    return Math.min(bw / w, (bh - 2) / h, 2);
  }
  function applyZoom() {
    var shown = null;
    document.querySelectorAll(".stages .graph > svg").forEach(function (svg) {
      // Graphviz sizes its SVGs in points: 1 pt = 96/72 px at 100%
      var w = parseFloat(svg.getAttribute("width")) * 4 / 3, h = parseFloat(svg.getAttribute("height")) * 4 / 3;
      if (!w || !h) { return; }
      var s = scale;
      if (fit) {
        s = fitScale(svg, w, h);
        if (!s) { return; }
        if (!svg.closest("article.stage").hidden) { shown = shown === null ? s : Math.min(shown, s); }
      }
      svg.style.width = (w * s) + "px"; svg.style.height = (h * s) + "px";
    });
    if (level) {
      level.textContent = !fit ? Math.round(scale * 100) + "%"
        : "fit" + (shown !== null ? " (" + Math.round(shown * 100) + "%)" : "");
    }
  }
  function zoom(how) {
    if (how === "fit") { fit = !fit; }
    else { fit = false; scale = Math.max(0.1, Math.min(4, how === "in" ? scale * 1.25 : scale / 1.25)); }
    applyZoom();
  }
  document.querySelectorAll("[data-zoom]").forEach(function (b) {
    b.addEventListener("click", function () { zoom(b.getAttribute("data-zoom")); });
  });

  // the change in view: on stepping, scroll the stage's graph box to the nodes its pass changed
  // (centred when they fit in the box, else their top left corner), then the page to the box
  var CHANGED = "g.node.added, g.node.rewritten, g.node.rebuilt, g.node.removed, g.group.changed";
  function reveal(article) {
    var graph = article && article.querySelector(".graph");
    if (!graph) { return; }
    var box = graph.getBoundingClientRect(), l = Infinity, t = Infinity, r = -Infinity, b = -Infinity;
    article.querySelectorAll(CHANGED).forEach(function (n) {
      var q = n.getBoundingClientRect();
      if (!q.width && !q.height) { return; }  // not displayed (hidden ghosts)
      l = Math.min(l, q.left); t = Math.min(t, q.top); r = Math.max(r, q.right); b = Math.max(b, q.bottom);
    });
    if (l === Infinity) { return; }
    var x0 = l - box.left + graph.scrollLeft, x1 = r - box.left + graph.scrollLeft;
    var y0 = t - box.top + graph.scrollTop, y1 = b - box.top + graph.scrollTop;
    var cw = graph.clientWidth, ch = graph.clientHeight;
    graph.scrollLeft = x1 - x0 <= cw ? (x0 + x1 - cw) / 2 : x0 - 8;
    graph.scrollTop = y1 - y0 <= ch ? (y0 + y1 - ch) / 2 : y0 - 8;
    box = graph.getBoundingClientRect();
    if (box.top < 0 || box.bottom > window.innerHeight) {
      graph.scrollIntoView({ block: box.height > window.innerHeight ? "start" : "nearest" });
    }
  }
  function step(i) {
    show(i);
    reveal(stages[current]);
  }

  buttons.forEach(function (b, k) { b.addEventListener("click", function () { step(k); }); });
  document.addEventListener("keydown", function (e) {
    if (e.target && /^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName)) { return; }
    if (e.key === "ArrowRight") { step(current + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft") { step(current - 1); e.preventDefault(); }
    else if (e.key === "Home") { step(0); e.preventDefault(); }
    else if (e.key === "End") { step(stages.length - 1); e.preventDefault(); }
    else if (e.key === "+" || e.key === "=") { zoom("in"); }
    else if (e.key === "-") { zoom("out"); }
    else if (e.key === "0") { zoom("fit"); }
  });
  document.addEventListener("click", function (e) {
    var g = e.target.closest ? e.target.closest("g.node") : null;
    if (g) { describe(g, true); }
  });
  document.addEventListener("mouseover", function (e) {
    var g = e.target.closest ? e.target.closest("g.node") : null;
    if (g && !(details && details.getAttribute("data-node"))) { describe(g, false); }
  });
  // colour by precision: each measured ciphertext part from red (fewest bits) to green (most)
  var byBits = document.getElementById("colour-bits");
  function paintBits(root) {
    if (!byBits) { return; }
    var lo = parseFloat(byBits.getAttribute("data-lo")), hi = parseFloat(byBits.getAttribute("data-hi"));
    (root || document).querySelectorAll("g.node").forEach(function (g) {
      var info = data[g.id];
      if (!info || info.bits === undefined) { return; }
      g.classList.add("has-bits");
      var t = hi > lo ? (info.bits - lo) / (hi - lo) : 1;
      g.querySelectorAll("polygon, path, rect").forEach(function (shape) {
        shape.style.fill = byBits.checked ? "hsl(" + Math.round(120 * t) + ", 75%, 72%)" : "";
      });
    });
    document.body.classList.toggle("by-bits", byBits.checked);
  }
  if (byBits) { byBits.addEventListener("change", function () { paintBits(); }); }

  R.describe = describe; R.applyZoom = applyZoom; R.reveal = reveal; R.paintBits = paintBits;
  R.current = function () { return stages[current]; };
  show(0);
})();
