/** The `metrics` section: Prometheus metrics on their own listener (off when the section is absent). */
export interface MetricsOptions {
  /** HOST:PORT of the listener serving GET /metrics (default 127.0.0.1:9464). */
  listen: string;
}
