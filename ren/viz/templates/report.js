// ren-inspect report: stage stepping (buttons, ←/→, Home/End), node details on click/hover, rule
// highlighting, hiding removed nodes and a before | after view of one pass.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("node-data").textContent || "{}");
  var stages = Array.prototype.slice.call(document.querySelectorAll("article.stage"));
  var buttons = Array.prototype.slice.call(document.querySelectorAll(".stage-button"));
  var current = 0;
  var details = document.getElementById("details");
  var FIELDS = ["node", "op", "family", "dtype", "arg", "ring", "domain", "device", "sources", "status",
                "rule", "replaces", "replaced by"];
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
  }

  function describe(g, pin) {
    var info = data[g.id];
    if (!info || !details) { return; }
    var dl = details.querySelector("dl");
    dl.textContent = "";
    FIELDS.forEach(function (f) {
      if (info[f] === undefined && (f === "replaced by")) { return; }
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

  // zoom: scale every stage graph from its own size (viewBox); "fit" fills the width
  var scale = 1, fit = false;
  var level = document.querySelector(".zoom-level");
  function applyZoom() {
    document.querySelectorAll(".stages .graph > svg").forEach(function (svg) {
      // Graphviz sizes its SVGs in points: 1 pt = 96/72 px at 100%
      var w = parseFloat(svg.getAttribute("width")), h = parseFloat(svg.getAttribute("height"));
      if (!w || !h) { return; }
      if (fit) { svg.style.width = "100%"; svg.style.height = "auto"; }
      else { svg.style.width = (w * scale * 4 / 3) + "px"; svg.style.height = (h * scale * 4 / 3) + "px"; }
    });
    if (level) { level.textContent = fit ? "fit" : Math.round(scale * 100) + "%"; }
  }
  function zoom(how) {
    if (how === "fit") { fit = !fit; }
    else { fit = false; scale = Math.max(0.1, Math.min(4, how === "in" ? scale * 1.25 : scale / 1.25)); }
    applyZoom();
  }
  document.querySelectorAll("[data-zoom]").forEach(function (b) {
    b.addEventListener("click", function () { zoom(b.getAttribute("data-zoom")); });
  });

  buttons.forEach(function (b, k) { b.addEventListener("click", function () { show(k); }); });
  document.addEventListener("keydown", function (e) {
    if (e.target && /^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName)) { return; }
    if (e.key === "ArrowRight") { show(current + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft") { show(current - 1); e.preventDefault(); }
    else if (e.key === "Home") { show(0); e.preventDefault(); }
    else if (e.key === "End") { show(stages.length - 1); e.preventDefault(); }
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
  show(0);
})();
