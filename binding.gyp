{
  "targets": [
    {
      "target_name": "sd_notify",
      "sources": ["native/sd_notify.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    },
    {
      "target_name": "gpio_chardev",
      "sources": ["native/gpio_chardev.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    },
    {
      "target_name": "sched_policy",
      "sources": ["native/sched_policy.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    },
    {
      "target_name": "evdev",
      "sources": ["native/evdev.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    }
  ]
}
