/** A broker connection, as the agent and the reference service both take it (the `mqtt` section). */
export interface MqttOptions {
  url: string;
  username?: string;
  passwordFile?: string;
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  topicPrefix: string;
  commandSecretFile?: string;
  commandMaxAgeSeconds: number;
  maxGuestLinks: number;
  /** Signed mode: how long a signed guest link stays valid without being signed again (the service: daily). */
  guestLinkMaxAgeSeconds: number;
  /** A network time further ahead than this is clamped to now + this (protocol/issuedAt.ts). */
  futureSkewSeconds: number;
  /** Signed mode: a lockdown or holidays message signed longer ago than this is refused. */
  retainedMaxAgeSeconds: number;
  keepaliveSeconds: number;
  /** 5, or 4 (MQTT 3.1.1) for brokers without MQTT 5. */
  protocolVersion: 4 | 5;
  homeAssistant: {
    discovery: boolean;
    prefix: string;
    /** The code Home Assistant's unlocks must carry, in a file (util/secretFiles.ts readHomeAssistantCode). */
    codeFile?: string;
    /** The device's configuration_url in Home Assistant. */
    configurationUrl?: string;
  };
}

/** A SIEM's syslog receiver (the agent's `syslog`, the service's `server.syslog`; docs/audit.md, "SIEM export"). */
export interface SyslogOptions {
  /** tls://HOST[:PORT] (RFC 5425, 6514 by default) or tcp://LOOPBACK:PORT. */
  url: string;
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  serverName?: string;
  format: 'rfc5424' | 'json';
  facility: string;
  enterpriseId: number;
  /** Absent: the agent's id, or the service machine's host name. */
  hostname?: string;
}
