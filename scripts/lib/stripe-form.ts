/**
 * Decodes the `application/x-www-form-urlencoded` bodies the `stripe` package sends
 * (`line_items[0][price_data][currency]=usd`) back into nested objects and arrays.
 */
export type FormValue = string | FormObject | FormValue[];
export interface FormObject {
  [key: string]: FormValue;
}

export function decodeStripeForm(body: string): FormObject {
  const root: FormObject = {};
  for (const [name, value] of new URLSearchParams(body)) {
    const path = name.split(/\[|\]\[|\]/).filter((part, index) => index === 0 || part !== '');
    let node: FormObject | FormValue[] = root;
    path.forEach((key, index) => {
      const last = index === path.length - 1;
      const container = node as Record<string, FormValue>;
      if (last) {
        container[key] = value;
        return;
      }
      const nextIsIndex = /^\d+$/.test(path[index + 1] ?? '');
      container[key] ??= nextIsIndex ? [] : {};
      node = container[key] as FormObject | FormValue[];
    });
  }
  return root;
}
