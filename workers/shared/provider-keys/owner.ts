/** Who a stored key belongs to, and who acts on it (for the audit log). */
export type KeyOwner = { type: 'end_user'; endUserId: string } | { type: 'developer'; developerId: string };

/** `user`, `developer`, `admin` or `system`, as `audit_logs.actor_type` spells them. */
export interface AuditActor {
  type: 'user' | 'developer' | 'admin' | 'system';
  /** Internal id (end user or developer row id); null for the admin and the system. Never a raw external user id. */
  id: string | null;
}

export function actorOf(owner: KeyOwner): AuditActor {
  return owner.type === 'end_user' ? { type: 'user', id: owner.endUserId } : { type: 'developer', id: owner.developerId };
}
