/**
 * A view of the console: its path under the role's prefix, its label in the nav, and its component.
 * Each role's views are listed in `views/<role>/index.ts`; the layout and router read them from here.
 */
import type { ComponentType } from 'react';
import type { Role } from '../session.tsx';
import { developerViews } from './developer/index.ts';
import { operatorViews } from './operator/index.ts';

export interface View {
  /** Path segment after `/<role>/` (`''` for the role's first view). */
  path: string;
  label: string;
  component: ComponentType;
}

export const viewsByRole: Record<Role, readonly View[]> = { developer: developerViews, operator: operatorViews };

/** The view for a location path such as `/developer/keys` (a query after `?` is the view's), or the role's first view. */
export function findView(role: Role, path: string): View | undefined {
  const views = viewsByRole[role];
  const bare = path.split('?')[0]!;
  const rest = bare.startsWith(`/${role}`) ? bare.slice(role.length + 1).replace(/^\//, '') : '';
  return views.find((view) => view.path === rest) ?? views[0];
}

export const viewPath = (role: Role, view: View) => `/${role}${view.path ? `/${view.path}` : ''}`;
