/** Stylesheets imported as text (esbuild `loader: { '.css': 'text' }`), e.g. the panel CSS inlined in HTML reports. */
declare module '*.css' {
	const text: string;
	export default text;
}
