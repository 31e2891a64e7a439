# Sourced by ensure-deps.sh and install.sh: node-gyp builds the native addons (ours in binding.gyp, better-sqlite3,
# epoll) against the headers installed with the running Node.js, so nothing is downloaded. NodeSource's nodejs
# puts them in /usr/include/node, an official tarball or nvm under its own prefix: <prefix>/include/node/node.h
# beside <prefix>/bin/node. Set through the environment (npm passes npm_config_* on to node-gyp) rather than in
# .npmrc, where newer npm warns "Unknown project config nodedir" on every command.

# The prefix holding include/node/node.h for the node on PATH, or nothing.
node_headers_prefix() {
  local prefix
  prefix=$(node -p 'require("path").resolve(process.execPath, "../..")' 2>/dev/null) || return 0
  if [ -f "$prefix/include/node/node.h" ]; then printf '%s\n' "$prefix"; fi
}

# Headers node-gyp already has in its own cache (downloaded once before): they need no nodedir either.
node_headers_cached() {
  local version
  version=$(node -p 'process.versions.node' 2>/dev/null) || return 1
  [ -f "${HOME:-/root}/.cache/node-gyp/$version/include/node/node.h" ]
}

# Exports npm_config_nodedir when the local headers exist and the caller did not choose one already.
export_node_headers() {
  local prefix
  if [ -n "${npm_config_nodedir:-}" ]; then return 0; fi
  prefix=$(node_headers_prefix)
  if [ -n "$prefix" ]; then export npm_config_nodedir="$prefix"; fi
}
