/** Joins the component's own class with the one the app passes in. */
export function classNames(...names: Array<string | false | undefined>): string {
  return names.filter(Boolean).join(' ');
}
