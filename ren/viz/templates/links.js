// ren-inspect report: linked sections.  Hovering (or clicking) a buffer, an exec unit, a kernel
// or their node in the final stage marks the same thing (class "linked") in every section: the
// arena rectangle and row of a buffer, the exec units and kernels that use it, the final stage's
// BUFFER and KERNEL nodes.  The links travel as JSON (ren.viz.links.link_data).
(function () {
  "use strict";
  var el = document.getElementById("links");
  if (!el) { return; }
  var links = JSON.parse(el.textContent || "{}");
  var items = links.items || [], nodes = links.nodes || {}, units = links.units || {};
  var LINKABLE = "[data-buf], [data-item], [data-unit], g.node";

  // what an element stands for: {bufs: [...], item: index or null}
  function what(t) {
    var bufs = [], item = null;
    if (t.hasAttribute("data-buf")) { bufs.push(t.getAttribute("data-buf")); }
    else if (t.hasAttribute("data-item")) { item = Number(t.getAttribute("data-item")); }
    else if (t.hasAttribute("data-unit")) {
      var u = units[t.getAttribute("data-unit")];
      if (u === undefined) { return null; }
      item = u;
    } else {
      var n = nodes[t.id];
      if (!n) { return null; }
      if (n.buf) { bufs.push(n.buf); } else { item = n.item; }
    }
    if (item !== null && items[item]) { bufs = bufs.concat(items[item].bufs); }
    return { bufs: bufs, item: item };
  }

  var current = "";
  function mark(w) {
    var key = JSON.stringify(w);
    if (key === current) { return; }
    current = key;
    document.querySelectorAll(".linked").forEach(function (e) { e.classList.remove("linked"); });
    if (!w) { return; }
    var has = {};
    w.bufs.forEach(function (b) { has[b] = true; });
    document.querySelectorAll("[data-buf]").forEach(function (e) {
      if (has[e.getAttribute("data-buf")]) { e.classList.add("linked"); }
    });
    if (w.item !== null) {
      document.querySelectorAll("[data-item='" + w.item + "']").forEach(function (e) { e.classList.add("linked"); });
      Object.keys(units).forEach(function (u) {
        if (units[u] === w.item) {
          document.querySelectorAll("[data-unit='" + u + "']").forEach(function (e) { e.classList.add("linked"); });
        }
      });
    }
    Object.keys(nodes).forEach(function (id) {
      var n = nodes[id];
      if ((n.buf && has[n.buf]) || (n.item !== undefined && n.item === w.item)) {
        var g = document.getElementById(id);
        if (g) { g.classList.add("linked"); }
      }
    });
  }
  function at(e) {
    var t = e.target.closest ? e.target.closest(LINKABLE) : null;
    return t ? what(t) : null;
  }
  document.addEventListener("mouseover", function (e) { var w = at(e); if (w) { mark(w); } });
  document.addEventListener("click", function (e) { var w = at(e); if (w) { current = ""; mark(w); } });
})();
