// Table types of the templates module: saved instance configurations (migration 020).
import type { Generated } from 'kysely';

/** A saved instance configuration. Flags are 0/1; times are epoch ms. */
export interface TemplatesTable {
  id: Generated<number>;
  /** Names this version of the template: unique, and replaced by each update. */
  hash_id: string;
  /** The owner. */
  user_id: number;
  name: string;
  image: string;
  /** Appended to image as `image:tag` when an instance is created; null or '' for none. */
  tag: string | null;
  /** Docker-style options as given: `-e NAME=VALUE -p 8080:8080`. */
  env: string;
  onstart: string;
  runtype: string;
  use_ssh: number;
  ssh_direct: number;
  jup_direct: number;
  use_jupyter_lab: number;
  jupyter_dir: string | null;
  docker_login_repo: string | null;
  href: string | null;
  repo: string | null;
  readme: string | null;
  readme_visible: number;
  /** Shown as `desc`. */
  description: string | null;
  /** JSON object: an offer search the template suggests. */
  extra_filters: string;
  /** GB; an instance created from the template gets this disk unless the request gives one. */
  recommended_disk_space: number | null;
  /** 1: only its owner sees and rents from it; 0: everyone does. */
  private: number;
  created_at: number;
  updated_at: number;
  /** Set by a delete; the template is then neither shown nor rentable. */
  deleted_at: number | null;
}

export interface TemplateTables {
  templates: TemplatesTable;
}
