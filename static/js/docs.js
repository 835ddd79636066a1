// The API docs: Swagger UI (served from the installed swagger-ui-bundle-v2 package) drawn
// from the app's own OpenAPI document. No inline script: the URL comes from a data attribute.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const root = document.getElementById("swagger-ui");
  if (!root || typeof window.SwaggerUIBundle !== "function") {
    return;
  }
  window.SwaggerUIBundle({
    url: root.dataset.openapiUrl,
    domNode: root,
    deepLinking: true,
    defaultModelsExpandDepth: 0,
  });
});
