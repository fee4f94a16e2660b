import { defineConfig } from "vite";

/** The console is served by the gateway at /console/ (services/gateway/src/console.ts). */
export default defineConfig({
  root: import.meta.dirname,
  base: "/console/",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  resolve: { alias: { react: "preact/compat", "react-dom": "preact/compat" } },
  build: { outDir: "dist", emptyOutDir: true, target: "es2022", sourcemap: false, assetsInlineLimit: 0 },
});
