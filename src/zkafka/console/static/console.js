// zkafka console: the live parts of a page ([data-live], by id) refresh themselves every
// body[data-refresh] seconds from the same URL, leaving the rest (forms being filled in) alone.
// The console's own script, served by the console: no CDN, no framework.
(function () {
  "use strict";
  const every = Number(document.body.dataset.refresh || 0) * 1000;
  if (!every) return;
  async function refresh() {
    try {
      const response = await fetch(window.location.href, { cache: "no-store" });
      const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
      for (const old of document.querySelectorAll("[data-live]")) {
        const replacement = fresh.getElementById(old.id);
        if (replacement) old.replaceWith(document.importNode(replacement, true));
      }
      document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
      document.body.dataset.refreshError = response.ok ? "" : String(response.status);
    } catch (e) {
      document.body.dataset.refreshError = String(e); // the console is away: try again later
    }
    window.setTimeout(refresh, every);
  }
  window.setTimeout(refresh, every);
})();
