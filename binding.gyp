{
  "targets": [
    {
      "target_name": "sd_notify",
      "sources": ["native/sd_notify.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    }
  ]
}
