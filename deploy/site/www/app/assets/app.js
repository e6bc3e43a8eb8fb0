// The client-side router of the example app: shows the path, and asks the API through
// the proxy route /api/ (the upstream sees /plaintext).
document.getElementById("route").textContent = location.pathname;
fetch("/api/plaintext")
  .then((r) => r.text())
  .then((t) => { document.getElementById("api").textContent = t; })
  .catch((e) => { document.getElementById("api").textContent = String(e); });
