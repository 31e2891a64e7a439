# The system around the program: configuration, data directories, the door-agent user and its groups. Sourced by
# install.sh, and copied into the Debian package's postinst and postrm by package-deb.sh (where no file of the
# package is left to source at purge), so a package and install.sh set up a door the same way. POSIX sh.
# The caller sets R (the root, empty for /), ETC, DATA, EXAMPLES (the directory holding the example configs),
# SCHEMA (the installed schema/config.schema.json), WITH_SERVICE and REAL_ROOT (true or false) and defines say().

# /etc/door-agent/config.yaml from the example only if there is none (never overwritten), the directories'
# modes, and on a real root the user door-agent (in gpio, dialout and input) owning the data directories.
setup_system() {
  mkdir -p "$ETC" "$DATA"
  if $WITH_SERVICE && [ ! -e "$ETC/service.yaml" ]; then
    install -m 0640 "$EXAMPLES/service.example.yaml" "$ETC/service.yaml"
    say "wrote $ETC/service.yaml from the example (the reference service's configuration)"
  fi
  if [ -e "$ETC/config.yaml" ]; then
    say "kept the existing $ETC/config.yaml"
  else
    install -m 0640 "$EXAMPLES/door-agent.example.yaml" "$ETC/config.yaml"
    # Its first line names the JSON Schema for editors (docs/config-schema.md): the installed one, not the repository's.
    sed -i "1s|^\(# yaml-language-server: [$]schema=\).*|\1$SCHEMA|" "$ETC/config.yaml"
    say "wrote $ETC/config.yaml from the example: edit it, then: door-agent config check"
  fi
  chmod 0750 "$ETC" "$DATA"

  if $REAL_ROOT; then
    for group in gpio dialout input; do getent group "$group" >/dev/null || groupadd --system "$group"; done
    if ! id door-agent >/dev/null 2>&1; then
      useradd --system --home-dir /var/lib/door-agent --shell /usr/sbin/nologin --user-group door-agent
      say "created the system user door-agent"
    fi
    usermod -a -G gpio,dialout,input door-agent
    chgrp door-agent "$ETC" "$ETC/config.yaml"
    if [ -e "$ETC/service.yaml" ]; then chgrp door-agent "$ETC/service.yaml"; fi
    mkdir -p "$R/var/lib/door-agent-service" && chown door-agent:door-agent "$R/var/lib/door-agent-service"
    chown door-agent:door-agent "$DATA"
  else
    say "(test root: users, groups and systemctl skipped)"
  fi
}

# The configuration, the data (the cache, the audit log, the service's database) and the user: nothing is kept.
purge_system() {
  rm -rf "$ETC" "$DATA" "$R/var/lib/door-agent-service"
  if $REAL_ROOT && id door-agent >/dev/null 2>&1; then userdel door-agent || true; fi
}
