// Live updates of the web view. The page names what it shows in <div id="live">
// (a thread, or the whole forum, and a print of what it showed); /live sends
// `changed` when that is out of date, and this script fetches the page again and
// swaps in the new content of <main>. It never destroys a form in use (a field
// with focus, typed text or a refusal in it, or a folded reply form left open):
// then only the parts of the page marked data-live-region that hold no such form
// are swapped, and the whole swap waits until the form is left. Without
// JavaScript the pages are plain pages, and nothing here is needed.
(function () {
  "use strict";
  var marker = document.getElementById("live");
  var main = document.querySelector("main");
  if (!marker || !main || !window.EventSource || !window.fetch || !window.DOMParser) {
    return;
  }

  var params = new URLSearchParams();
  var thread = marker.getAttribute("data-live-thread");
  var seen = marker.getAttribute("data-live-seen");
  if (thread) params.set("thread", thread);
  if (seen) params.set("seen", seen);
  var source = new EventSource("/live?" + params.toString());

  var fetching = false; // a fetch is under way
  var again = false; // a change came while it was
  var held = false; // a whole swap waits for a form to be left

  source.addEventListener("changed", refresh);
  // The session ended (signed out, expired, token revoked): the page now leads to
  // the sign-in page.
  source.addEventListener("ended", function () {
    source.close();
    location.reload();
  });
  window.addEventListener("pagehide", function () {
    source.close();
  });
  // A held swap happens once the form is left: focus moved out, or text cleared.
  ["focusout", "input", "change"].forEach(function (type) {
    main.addEventListener(type, function () {
      setTimeout(function () {
        if (held && !inUse(main)) refresh();
      }, 0);
    });
  });

  function refresh() {
    if (fetching) {
      again = true;
      return;
    }
    fetching = true;
    fetch(location.href, {
      credentials: "same-origin",
      cache: "no-store",
      headers: { Accept: "text/html" }
    })
      .then(function (resp) {
        if (resp.redirected && new URL(resp.url).pathname === "/sign-in") {
          source.close();
          location.assign(resp.url);
          return null;
        }
        return resp.text();
      })
      .then(function (text) {
        if (typeof text === "string") swap(text);
      })
      .catch(function () {
        // The next change tries again.
      })
      .then(function () {
        fetching = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  function swap(text) {
    var fresh = new DOMParser().parseFromString(text, "text/html").querySelector("main");
    if (!fresh) return;
    if (!inUse(main)) {
      var active = document.activeElement;
      var focused = active && active !== main && main.contains(active) ? active.id : "";
      var nodes = Array.prototype.map.call(fresh.childNodes, function (node) {
        return document.importNode(node, true);
      });
      main.replaceChildren.apply(main, nodes);
      held = false;
      if (focused) {
        var target = document.getElementById(focused);
        if (target) target.focus({ preventScroll: true });
      }
      return;
    }
    fresh.querySelectorAll("[data-live-region][id]").forEach(function (region) {
      var old = document.getElementById(region.id);
      if (old && main.contains(old) && !inUse(old)) {
        old.replaceWith(document.importNode(region, true));
      }
    });
    held = true;
  }

  // Whether `root` holds a form the person is using: one opened to reply, or
  // holding focus, typed text or a refusal.
  function inUse(root) {
    var active = document.activeElement;
    var opened = Array.prototype.some.call(root.querySelectorAll("details[open]"), function (d) {
      return d.querySelector("form") !== null;
    });
    if (opened) return true;
    var forms = Array.prototype.slice.call(root.querySelectorAll("form"));
    if (root.closest && root.closest("form")) forms.push(root.closest("form"));
    return forms.some(function (form) {
      if (active && form.contains(active) && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName)) {
        return true;
      }
      if (form.querySelector(".refusal")) return true;
      return Array.prototype.some.call(form.elements, typed);
    });
  }

  // Whether a field holds something the person typed or chose and has not sent.
  function typed(field) {
    switch (field.tagName) {
      case "TEXTAREA":
        return field.value.trim() !== "";
      case "SELECT":
        return Array.prototype.some.call(field.options, function (option) {
          return option.selected !== option.defaultSelected;
        });
      case "INPUT":
        if (/^(hidden|submit|button|reset|image)$/.test(field.type)) return false;
        if (field.type === "checkbox" || field.type === "radio") {
          return field.checked !== field.defaultChecked;
        }
        return field.value !== field.defaultValue;
      default:
        return false;
    }
  }
})();
