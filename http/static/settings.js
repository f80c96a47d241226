// The settings page (/settings): remembers each field's value as the page
// came, saves only the fields that differ (POST /api/settings/bulk-update;
// an emptied field is not sent: empty values never clear a setting),
// resets one setting to its environment value or default (DELETE), shows
// each key's outcome beside its field, and offers suggestions for the
// settings that have them. Sensitive values never reach the page: their
// fields start empty and are sent only when typed into.
(function () {
  "use strict";

  var form = document.getElementById("settings-form");
  var statusEl = document.getElementById("status");
  var saveBtn = document.getElementById("save");
  var rows = Array.prototype.slice.call(document.querySelectorAll(".setting"));
  var initial = {}; // key → value as loaded or last saved

  function field(key) { return document.getElementById("in-" + key); }

  function setStatus(text, isError) {
    statusEl.textContent = text;
    statusEl.className = isError ? "error" : "";
  }

  function showError(key, text) {
    var el = document.getElementById("err-" + key);
    if (!el) return;
    el.textContent = text || "";
    el.hidden = !text;
    var input = field(key);
    if (input) {
      if (text) input.setAttribute("aria-invalid", "true"); else input.removeAttribute("aria-invalid");
    }
  }

  function markChanged(row) {
    var key = row.getAttribute("data-key");
    var input = field(key);
    if (!input || input.disabled) return;
    row.classList.toggle("changed", input.value !== initial[key]);
  }

  // applySetting shows a setting as the API now has it: its source, its
  // value (never a sensitive one), and whether Reset applies.
  function applySetting(st) {
    var input = field(st.key);
    var src = document.getElementById("src-" + st.key);
    var row = document.getElementById("row-" + st.key);
    if (src) {
      src.textContent = st.source;
      src.setAttribute("data-source", st.source);
    }
    if (input && !input.disabled) {
      if (st.sensitive) {
        input.value = "";
        input.placeholder = st.value ? "set (" + st.source + "), hidden: type to replace" : "not set";
      } else if (input.tagName === "SELECT" && st.type === "boolean") {
        var v = String(st.value).toLowerCase();
        input.value = ["true", "1", "yes", "on", "y", "t"].indexOf(v) >= 0 ? "true" : "false";
      } else {
        input.value = st.value;
      }
      initial[st.key] = input.value;
    }
    var reset = row && row.querySelector("button.reset");
    if (reset) reset.hidden = st.source !== "db";
    if (row) row.classList.remove("changed");
    showError(st.key, "");
  }

  function send(method, url, body) {
    var opts = { method: method, credentials: "same-origin", headers: { "Accept": "application/json" } };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    return fetch(url, opts).then(function (r) {
      return r.text().then(function (t) {
        var data = {};
        try { data = t ? JSON.parse(t) : {}; } catch (e) { data = { detail: t }; }
        return { status: r.status, data: data };
      });
    });
  }

  rows.forEach(function (row) {
    var key = row.getAttribute("data-key");
    var input = field(key);
    if (!input) return;
    initial[key] = input.value;
    input.addEventListener("input", function () { markChanged(row); });
    input.addEventListener("change", function () { markChanged(row); });
    if (row.getAttribute("data-suggest") === "true") suggestFor(row, key, input);
  });

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var changes = [];
    var skipped = 0;
    rows.forEach(function (row) {
      var key = row.getAttribute("data-key");
      var input = field(key);
      if (!input || input.disabled || input.value === initial[key]) return;
      if (input.value.trim() === "") { skipped++; return; }
      changes.push({ key: key, value: input.value });
    });
    if (changes.length === 0) {
      setStatus(skipped ? "Nothing to save: emptied fields are not saved (use Reset to return a setting to its environment value or default)." : "Nothing changed.", false);
      return;
    }
    saveBtn.disabled = true;
    setStatus("Saving " + changes.length + " setting" + (changes.length === 1 ? "" : "s") + "…", false);
    send("POST", "/api/settings/bulk-update", changes).then(function (res) {
      var d = res.data || {};
      (d.settings || []).forEach(applySetting);
      (d.errors || []).forEach(function (e) { showError(String(e.key).toUpperCase(), e.detail); });
      if (res.status >= 400 && !d.errors) {
        setStatus("Not saved: " + (d.detail || ("HTTP " + res.status)), true);
        return;
      }
      var msg = "Saved " + (d.updated || []).length + ".";
      if ((d.errors || []).length) msg += " " + d.errors.length + " not saved: see the messages beside them.";
      if (d.restart_required) msg += " Some of them apply after the processes restart.";
      if (skipped) msg += " Emptied fields were not saved.";
      setStatus(msg, (d.errors || []).length > 0);
      document.body.setAttribute("data-saved", String(Number(document.body.getAttribute("data-saved") || 0) + 1));
    }).catch(function (e) {
      setStatus("Not saved: " + e, true);
    }).then(function () { saveBtn.disabled = false; });
  });

  form.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest("button.reset");
    if (!btn) return;
    var key = btn.getAttribute("data-key");
    btn.disabled = true;
    send("DELETE", "/api/settings/" + encodeURIComponent(key)).then(function (res) {
      if (res.status >= 400) {
        showError(key, res.data.detail || ("HTTP " + res.status));
        return;
      }
      applySetting(res.data);
      setStatus(key + " now comes from " + (res.data.source === "env" ? "the environment" : "its default") + ".", false);
      var input = field(key);
      if (input) input.focus();
    }).catch(function (e) { showError(key, String(e)); })
      .then(function () { btn.disabled = false; });
  });

  // suggestFor fills the field's datalist from the suggestions API as the
  // user types; for lists (eng+deu, en,de) it completes the last item.
  function suggestFor(row, key, input) {
    var list = document.getElementById("list-" + key);
    if (!list) return;
    var timer = null;
    var last = null;
    function refresh() {
      var v = input.value;
      var cut = Math.max(v.lastIndexOf("+"), v.lastIndexOf(","));
      var head = cut >= 0 ? v.slice(0, cut + 1) : "";
      var q = v.slice(cut + 1).trim();
      if (q === last) return;
      last = q;
      send("GET", "/api/settings/" + encodeURIComponent(key) + "/suggestions?limit=20&q=" + encodeURIComponent(q))
        .then(function (res) {
          if (res.status !== 200) return;
          while (list.firstChild) list.removeChild(list.firstChild);
          (res.data.suggestions || []).forEach(function (s) {
            var o = document.createElement("option");
            o.value = head + s;
            list.appendChild(o);
          });
        });
    }
    input.addEventListener("focus", refresh);
    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(refresh, 150);
    });
  }
})();
