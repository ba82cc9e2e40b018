// A template as clients read it: flags as booleans, times in epoch seconds, `creator_id` the
// owner, `desc` the description, extra_filters as the object given.
import type { TemplateRow } from './templates.repo.js';

export function templateView(r: TemplateRow) {
  return {
    id: r.id,
    hash_id: r.hash_id,
    creator_id: r.user_id,
    name: r.name,
    image: r.image,
    tag: r.tag,
    env: r.env,
    onstart: r.onstart,
    runtype: r.runtype,
    use_ssh: r.use_ssh === 1,
    ssh_direct: r.ssh_direct === 1,
    jup_direct: r.jup_direct === 1,
    use_jupyter_lab: r.use_jupyter_lab === 1,
    jupyter_dir: r.jupyter_dir,
    docker_login_repo: r.docker_login_repo,
    href: r.href,
    repo: r.repo,
    readme: r.readme,
    readme_visible: r.readme_visible === 1,
    desc: r.description,
    extra_filters: JSON.parse(r.extra_filters) as Record<string, unknown>,
    recommended_disk_space: r.recommended_disk_space,
    private: r.private === 1,
    created_at: r.created_at / 1000,
    updated_at: r.updated_at / 1000,
  };
}

export type TemplateView = ReturnType<typeof templateView>;

/** The template row's schema: its contract (src/contract/schemas/templates.ts). */
export { templateSchema } from '../../../contract/schemas/templates.js';
