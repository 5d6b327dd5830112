// ren-inspect report: stage stepping (buttons, ←/→, Home/End) and node details on click/hover.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("node-data").textContent || "{}");
  var stages = Array.prototype.slice.call(document.querySelectorAll("article.stage"));
  var buttons = Array.prototype.slice.call(document.querySelectorAll(".stage-button"));
  var current = 0;
  var details = document.getElementById("details");
  var FIELDS = ["node", "op", "family", "dtype", "arg", "ring", "domain", "device", "sources", "status"];

  function show(i) {
    if (!stages.length) { return; }
    i = Math.max(0, Math.min(stages.length - 1, i));
    stages.forEach(function (s, k) { s.hidden = k !== i; });
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
      var dt = document.createElement("dt"), dd = document.createElement("dd");
      dt.textContent = f; dd.textContent = info[f] === undefined ? "" : String(info[f]);
      dd.className = "f-" + f;
      dl.appendChild(dt); dl.appendChild(dd);
    });
    details.querySelector(".hint").textContent = pin ? "Selected (click another node to change)." : "Hovered.";
    if (pin) {
      document.querySelectorAll("g.node.selected").forEach(function (n) { n.classList.remove("selected"); });
      g.classList.add("selected");
      details.setAttribute("data-node", g.id);
    }
  }

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
