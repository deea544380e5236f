// The operations page's live feed: the signed-in tenant's events from /ui/feed (Server-Sent
// Events), newest first. Event fields are written with textContent and a memory's id only into
// an href of this dashboard, never parsed as markup.
"use strict";
(function () {
  const list = document.getElementById("feed");
  const status = document.getElementById("feed-status");
  if (!list || !status) {
    return;
  }
  if (!window.EventSource) {
    status.textContent = "this browser cannot show live events";
    return;
  }
  const KEEP = 50;
  const ID = /^[0-9a-f-]{36}$/;
  const source = new EventSource("/ui/feed");
  source.onopen = function () {
    status.textContent = "connected: new events appear here as they happen";
  };
  source.onerror = function () {
    status.textContent = source.readyState === EventSource.CLOSED
      ? "the live feed is unavailable (the server refused it or is busy); reload to retry"
      : "reconnecting…";
  };
  source.onmessage = function (message) {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch (_) {
      return;
    }
    list.prepend(row(event));
    while (list.children.length > KEEP) {
      list.lastElementChild.remove();
    }
  };

  function row(event) {
    const item = document.createElement("li");
    const time = document.createElement("time");
    time.textContent = String(event.timestamp || "");
    const kind = document.createElement("strong");
    kind.textContent = String(event.type || "event");
    item.append(time, " ", kind);
    const data = event.data || {};
    const id = typeof data.memory_id === "string" && ID.test(data.memory_id) ? data.memory_id : null;
    if (id) {
      const link = document.createElement("a");
      link.href = "/ui/memory/" + id;
      link.textContent = id;
      item.append(" ", link);
    } else if (typeof data.count === "number") {
      item.append(" " + data.count + " memories");
    }
    return item;
  }
})();
