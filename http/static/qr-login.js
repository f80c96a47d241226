// The QR login page (/qr-login): asks for a challenge, shows its QR code
// (drawn by docflow as SVG), and follows the challenge every 2 seconds
// until a phone claims it or it expires; "Show a new code" starts again.
(function () {
  "use strict";

  var POLL_MS = 2000;
  var img = document.getElementById("qr-code");
  var statusEl = document.getElementById("qr-status");
  var again = document.getElementById("qr-new");
  var timer = null;
  var token = null;

  function say(text, state) {
    statusEl.textContent = text;
    document.body.setAttribute("data-qr", state);
  }

  function answer(r) {
    return r.json().then(function (body) {
      if (!r.ok) throw new Error(body && body.detail ? body.detail : "HTTP " + r.status);
      return body;
    });
  }

  function finish(text, state) {
    clearTimeout(timer);
    img.hidden = true;
    img.removeAttribute("src");
    say(text, state);
    again.hidden = false;
  }

  function start() {
    clearTimeout(timer);
    again.hidden = true;
    img.hidden = true;
    say("Preparing a code…", "loading");
    fetch("/api/qr-auth/challenge", { method: "POST", credentials: "same-origin" })
      .then(answer)
      .then(function (c) {
        token = c.challenge_token;
        img.src = c.qr_image_url;
        img.hidden = false;
        say("Scan this code with the docflow app. Waiting for your phone…", "pending");
        poll();
      })
      .catch(function (e) { finish("Could not make a code: " + e.message, "error"); });
  }

  function poll() {
    timer = setTimeout(function () {
      fetch("/api/qr-auth/challenge/" + encodeURIComponent(token), { credentials: "same-origin" })
        .then(answer)
        .then(function (s) {
          if (s.status === "claimed") {
            finish("Signed in on " + (s.device_name || "your phone") + ". You can close this page.", "claimed");
          } else if (s.status === "expired") {
            finish("This code expired. Show a new one to sign in.", "expired");
          } else {
            poll();
          }
        })
        .catch(function () { poll(); });
    }, POLL_MS);
  }

  again.addEventListener("click", start);
  start();
})();
