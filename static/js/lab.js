// The head lab, live (static/js/live.js does the fetching and swapping): every edit asks the
// server for the page's fragment (GET /?…&fragment=1). No attention arithmetic here: this
// file only joins grid cells into the URL's compact rows and says which parts to take.
"use strict";

(function () {
  const form = document.getElementById("lab-form");
  if (!form || !window.AttentionLab || !window.AttentionLab.live) return;
  const MATRIX_NAMES = new Set(["x", "w_q", "w_k", "w_v", "cell", "allowed"]);

  function rows(grid, read, between) {
    return Array.from(grid.querySelectorAll("tbody tr"))
      .map(function (tr) { return Array.from(tr.querySelectorAll("input")).map(read).join(between); })
      .join(";");
  }

  function stateParams(f, submitter) {
    const params = new URLSearchParams();
    new FormData(f).forEach(function (value, key) {
      if (!MATRIX_NAMES.has(key) && key !== "action") params.append(key, value);
    });
    // Every grid the form shows is sent: what is on screen is what is computed (a grid left
    // out would be generated again). The server keeps them through size changes.
    f.querySelectorAll("[data-matrix]").forEach(function (grid) {
      params.append(grid.dataset.matrix, rows(grid, function (c) { return c.value.trim(); }, ","));
    });
    const mode = f.querySelector("input[name=mask]:checked");
    const pattern = f.querySelector("#pattern");
    if (mode && mode.value === "custom" && pattern) {
      params.append("allowed", rows(pattern, function (b) { return b.checked ? "1" : "0"; }, ""));
    }
    if (submitter && submitter.name === "action") params.append("action", submitter.value);
    return params;
  }

  // An edit that changes the controls' shape (a size, the text, the mask, a button) takes
  // the server's controls too; a number typed into a grid leaves them as they are.
  function structural(job) {
    if (!job) return false;
    if (job.submitter) return true;
    return Boolean(job.target && job.target.hasAttribute && job.target.hasAttribute("data-structural"));
  }

  const lab = window.AttentionLab.live({
    form: "lab-form",
    params: stateParams,
    merge: function (older, newer) {
      return structural(older) && !structural(newer) ? Object.assign({}, newer, {
        target: older.target, submitter: older.submitter || newer.submitter,
      }) : newer;
    },
    url: function (params) { return "/?" + params.toString() + "&fragment=1"; },
    regions: function (doc, job) {
      const results = document.getElementById("lab-results");
      if (doc.liveStatus === 422) { // keep the last good results, greyed, under the sentences
        if (results) results.classList.add("stale");
        // … but after a change of shape take the query the server showed: a query left past
        // the last token by a shorter text would otherwise be sent again with every key.
        return structural(job) ? ["page-messages", "query"] : ["page-messages"];
      }
      return structural(job) ? ["page-messages", "lab-editor", "lab-results"] : ["page-messages", "lab-results"];
    },
    done: function (doc) {
      const json = document.getElementById("json-link");
      if (json && doc.pageState) json.href = "/lab.json?" + doc.pageState;
    },
  });

  form.addEventListener("change", function (event) {
    if (event.target.classList.contains("pattern-cell")) {
      const custom = form.querySelector("#mask-custom");
      if (custom && !custom.checked) {
        custom.checked = true;
        custom.dispatchEvent(new Event("change", { bubbles: true }));
      }
    }
  }, true); // before live.js reads the form

  // A token button outside the form picks the query.
  document.addEventListener("click", function (event) {
    const pick = event.target.closest("button[data-query]");
    if (!pick) return;
    event.preventDefault();
    document.getElementById("query").value = pick.dataset.query;
    lab.update({ now: true });
  });
})();
