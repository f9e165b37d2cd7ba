// What the scripts share: the model name, the tools as each SDK takes them, and the output line.
export const model = 'gpt-4o-mini';

export const createPO = {
  name: 'create_po',
  description: 'Create a purchase order',
  parameters: {
    type: 'object',
    properties: { sku: { type: 'string' }, qty: { type: 'integer' } },
    required: ['sku', 'qty'],
    additionalProperties: false,
  },
};

export const notify = {
  name: 'notify',
  description: 'Tell a team something',
  parameters: {
    type: 'object',
    properties: { to: { type: 'string' }, text: { type: 'string' } },
    required: ['to', 'text'],
    additionalProperties: false,
  },
};

// calls turns tool calls of any SDK's shape into {name, args} with parsed arguments.
export function calls(list, name = (c) => c.name, args = (c) => c.arguments) {
  return (list ?? []).map((c) => {
    const a = args(c);
    return { name: name(c), args: typeof a === 'string' ? JSON.parse(a) : a };
  });
}

// print writes the script's one result line.
export function print(result) {
  process.stdout.write(JSON.stringify(result) + '\n');
}
